"""Decompositions and the rest of torch.linalg: det, slogdet, logdet, inv, solve, cholesky, qr,
svd, svdvals, eigh, eigvalsh, lstsq, pinv, matrix_rank, matrix_power, matrix_exp, the vector
and matrix norms, cross, vecdot and multi_dot, batched over leading dims as torch's.

The factorizations run in the array library of the input's device (NumPy's LAPACK on the CPU,
CuPy's cuSOLVER on CUDA); their backward formulas are torch's (derived in torch's
FunctionsManual) written in rustgrad ops, so double backward records a graph of its own. A node
torch records on several outputs (slogdet, qr, svd, eigh, lstsq) is one node here too
(`NodeSpec.record_multi`). Only real float32/float64 inputs are taken: rustgrad has no complex
dtypes, and low-precision inputs are refused with torch's message.

Errors torch raises from LAPACK's `info` (a singular matrix for inv and solve, a matrix that is
not positive-definite for cholesky) are `rustgrad.linalg.LinAlgError`, a RuntimeError as torch's
`torch.linalg.LinAlgError`, with torch's message; the index it names is found by replaying the
factorization's pivoting here (`_lu_info`, `_cholesky_info`), since neither NumPy nor CuPy
reports it (and CuPy does not raise at all: a non-finite result is what gives it away).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from .. import _core, _dtype, return_types
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import broadcast_error, check_broadcastable, const, quiet_fp, same_device
from .compare import where
from .joins import cat
from .reduce import vector_norm as _reduce_vector_norm


class LinAlgError(RuntimeError):
    """The error of a linear-algebra function whose input is singular or not positive-definite
    (torch.linalg.LinAlgError): a RuntimeError naming the matrix of the batch and the failed
    step, as torch's."""


# reached and shown as rustgrad.linalg.LinAlgError, where the namespace re-exports it
LinAlgError.__module__ = "rustgrad.linalg"


# ---- shared checks and helpers -----------------------------------------------------------------
def _la(t: Tensor) -> Any:
    """The linalg namespace of t's array library (NumPy's LAPACK or CuPy's cuSOLVER)."""
    return t._backend.linalg


def _type_name(d: Any) -> str:
    return _dtype.scalar_type_name(_dtype.from_np(d.dtype))


def _no_kernel(kernel: str, t: Tensor) -> NotImplementedError:
    """torch's error of a kernel that has no loop for t's dtype ("lu_cpu" not implemented...)."""
    return NotImplementedError(
        f"\"{kernel}_{t._backend.DEVICE_TYPE}\" not implemented for '{_type_name(t._data)}'")


def _check_float(fname: str, t: Tensor, kernel: Optional[str] = None, any_dtype: bool = False) -> None:
    """torch's refusal of inputs its LAPACK/cuSOLVER kernels do not take: a non-float dtype,
    then float16/bfloat16 (refused by `kernel`'s dispatch where torch's check lets them through
    to it; by it for every dtype with any_dtype)."""
    d = t._data
    if d.dtype.kind == "c":  # rustgrad has no complex tensors; a registered backend might
        raise NotImplementedError(f"{fname}: complex inputs are not supported by rustgrad")
    floating = _dtype.is_floating_np(d.dtype)
    if kernel is not None and (any_dtype or floating) and (not floating or d.dtype.itemsize < 4):
        raise _no_kernel(kernel, t)
    if not floating:
        raise NotImplementedError(
            f"{fname}: Expected a floating point or complex tensor as input. Got {_type_name(d)}")
    if d.dtype.itemsize < 4:
        raise NotImplementedError(f"{fname}: Low precision dtypes not supported. Got {_type_name(d)}")


def _check_matrix(fname: str, t: Tensor, square: bool = True) -> None:
    d = t._data
    if d.ndim < 2:
        raise RuntimeError(f"{fname}: The input tensor A must have at least 2 dimensions.")
    if square and d.shape[-1] != d.shape[-2]:
        raise RuntimeError(
            f"{fname}: A must be batches of square matrices, but they are {d.shape[-2]} by "
            f"{d.shape[-1]} matrices")


def _check_square_float(fname: str, t: Tensor, kernel: Optional[str] = None) -> None:
    _check_matrix(fname, t)
    _check_float(fname, t, kernel)


def _eye(like: Any, xp: Any, n: int) -> Any:
    """An n x n identity array of like's dtype, broadcast to like's batch dims (read-only)."""
    return xp.broadcast_to(xp.eye(n, dtype=like.dtype), (*like.shape[:-2], n, n))


def _eye_t(t: Tensor) -> Tensor:
    """An identity constant matching t's last two (square) dims, batched as t."""
    d = t._data
    return const(_eye(d, t._backend, d.shape[-1]))


def _all_finite(xp: Any, a: Any) -> bool:
    return bool(xp.isfinite(a).all())


def _first_failure(info: Any) -> Tuple[int, int]:
    """(flat batch index, info value) of the first matrix whose info is nonzero."""
    flat = info.reshape(-1)
    i = int((flat != 0).argmax())
    return i, int(flat[i])


def _raise_info(fname: str, info: Any, batched: bool, say: Any) -> None:
    """torch's LinAlgError for the first matrix of the batch whose `info` is nonzero."""
    if not bool((info != 0).any()):
        return
    i, value = _first_failure(info)
    where_ = f"(Batch element {i}): " if batched else ""
    raise LinAlgError(f"{fname}: {where_}{say(value)}")


def _lu_info(xp: Any, a: Any) -> Any:
    """LAPACK getrf's `info` of each matrix of the batch `a` (..., n, n): the 1-based index of
    the first exactly zero pivot of LU with partial pivoting (the largest magnitude in the
    column, first of ties, as getrf), 0 when there is none. Replayed column by column over the
    whole batch: it runs only once the library has failed or given non-finite values."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    u = a.reshape((-1, n, n)).copy()
    info = xp.zeros(u.shape[0], dtype=xp.int32)
    rows = xp.arange(u.shape[0])
    with quiet_fp(xp):
        for k in range(n):
            p = k + xp.argmax(xp.abs(u[:, k:, k]), axis=1)
            top, piv_row = u[rows, k, :].copy(), u[rows, p, :].copy()
            u[rows, k, :] = piv_row
            u[rows, p, :] = top
            pivot = u[:, k, k]
            zero = pivot == 0
            info = xp.where((info == 0) & zero, k + 1, info).astype(xp.int32)
            factor = xp.where(zero[:, None], 0, u[:, k + 1:, k] / xp.where(zero, 1, pivot)[:, None])
            u[:, k + 1:, k:] -= factor[:, :, None] * u[:, None, k, k:]
    return info.reshape(batch)


def _cholesky_info(xp: Any, s: Any) -> Tuple[Any, Any]:
    """(info, factor) of LAPACK's unblocked potrf over the batch of symmetric matrices `s`:
    info, the order of the first leading minor that is not positive-definite (0 when the
    factorization completes); factor, the lower factor, or where it stopped at column j the
    columns before j, the failed pivot's value at (j, j), and s's lower triangle after it."""
    n = s.shape[-1]
    batch = s.shape[:-2]
    a = s.reshape((-1, n, n))
    low = xp.zeros_like(a)
    info = xp.zeros(a.shape[0], dtype=xp.int32)
    failed_at = xp.zeros(a.shape[0], dtype=a.dtype)
    with quiet_fp(xp):
        for j in range(n):
            d = a[:, j, j] - (low[:, j, :j] ** 2).sum(-1)
            bad = ~(d > 0)  # a NaN fails too, as in potrf
            first = (info == 0) & bad
            failed_at = xp.where(first, d, failed_at)
            info = xp.where(first, j + 1, info).astype(xp.int32)
            root = xp.sqrt(xp.where(bad, 1, d))
            low[:, j, j] = root
            low[:, j + 1:, j] = (a[:, j + 1:, j] - (low[:, j + 1:, :j] * low[:, None, j, :j]).sum(-1)) / root[:, None]
    stop = (info - 1).astype(xp.int64)[:, None, None]
    cols = xp.arange(n)[None, None, :]
    failed = (info != 0)[:, None, None]
    out = xp.where(failed & (cols >= stop), xp.tril(a), low)
    out = xp.where(failed & (cols == stop) & (cols.swapaxes(-1, -2) == stop), failed_at[:, None, None], out)
    return info.reshape(batch), out.reshape(s.shape)


def _multi(spec: Any, outputs: Sequence[Tensor], inputs: Sequence[Any], saved: Sequence[Any],
           ctx: Any = None) -> Tuple[Tensor, ...]:
    """Records `spec`'s node once for several outputs: output i is the node's input slot i, and
    the formula gets a tuple of their gradients (None where one got none). The outputs are
    history-free tensors made here first, so that they can be saved (as outputs, weakly, as
    torch saves them); `saved` are the spec's slots in order."""
    return spec.record_multi(tuple(outputs), tuple(inputs), ctx, **dict(zip(spec.saved, saved)))


def _needs_grad(*ts: Any) -> bool:
    return _core.is_grad_enabled() and any(isinstance(t, Tensor) and t.requires_grad for t in ts)


def _none_if_all_none(*gs: Any) -> bool:
    return all(g is None for g in gs)


# ---- det, slogdet, logdet -----------------------------------------------------------------------
def _prod_others(s: Tensor) -> Tensor:
    """For each entry of the last dim, the product of the other entries (exclusive cumprods from
    both ends): the gradient of prod that stays right when entries are zero."""
    ones = const(s._backend.ones((*s._data.shape[:-1], 1), dtype=s._data.dtype))
    left = cat([ones, s[..., :-1]], -1).cumprod(-1)
    right = cat([ones, s.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)
    return left * right


def _det_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    A, det_ = saved.A, saved.result
    scale = (g * det_).unsqueeze(-1).unsqueeze(-1)
    xp = A._backend
    if not _core.is_grad_enabled():
        # first order, torch's way: solve with A's LU, its zero pivots nudged to eps, for
        # det * grad: an exactly singular matrix (det 0) gets 0
        singular = det_._data == 0
    else:
        # under create_graph, torch takes the matrices with |det| < 100 eps through the SVD,
        # where det = det(U) det(Vh) prod(S) and prod's gradient skips the zero singular values
        singular = xp.abs(det_._data) < 100 * xp.finfo(det_._data.dtype).eps
    if not bool(singular.any()):
        return _inverse(A, None).mT * scale
    mask = const(singular[..., None, None])
    regular = _inverse(where(mask, _eye_t(A), A), None).mT * scale
    if not _core.is_grad_enabled():
        return where(mask, 0.0, regular)
    U, S, Vh = linalg_svd(A)
    la = _la(A)
    sign = const(la.det(U._data) * la.det(Vh._data))
    d = _prod_others(S) * (g * sign).unsqueeze(-1)
    return where(mask, (U * d.unsqueeze(-2)) @ Vh, regular)


DET = node("LinalgDetBackward0", _det_bw, saved=("A",), result=True)


@op(method="det", function="det", linalg="det", grad_fn="LinalgDetBackward0")
def linalg_det(A: Tensor) -> Tensor:
    """The determinant of each square matrix of A (..., n, n).

    Args:
        A (Tensor): a matrix or a batch of them, float32 or float64.

    The gradient is det(A) A^{-T} times the incoming gradient. At an exactly singular matrix it
    is 0, as torch's first-order formula gives; under create_graph a (nearly) singular matrix
    takes torch's SVD formula (the adjugate).

    Example::

        >>> rustgrad.linalg.det(rustgrad.tensor([[2., 1.], [1., 3.]]))
        tensor(5.)
    """
    _check_square_float("linalg.det", A, "lu")
    xp, d = A._backend, A._data
    with quiet_fp(xp):
        out = xp.asarray(_la(A).det(d), dtype=d.dtype)
    out = xp.where(xp.isnan(d).any(axis=(-2, -1)), xp.nan, out).astype(d.dtype)  # LAPACK's LU keeps NaN
    return DET.record(out, (A,), A=A)


def _slogdet_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    g = grads[1]  # the sign of a real determinant is piecewise constant: no gradient
    if g is None:
        return None
    return _inverse(saved.A, None).mT * g.unsqueeze(-1).unsqueeze(-1)


SLOGDET = node("LinalgSlogdetBackward0", _slogdet_bw, saved=("A", "sign"))


def _slogdet(A: Tensor, fname: str) -> Tuple[Tensor, Tensor]:
    _check_square_float(fname, A)
    xp = A._backend
    with quiet_fp(xp):
        sign, logabs = _la(A).slogdet(A._data)
    logabs = xp.where(xp.isnan(A._data).any(axis=(-2, -1)), xp.nan, logabs)  # as torch's LU
    dt = A._data.dtype
    sign_t = const(xp.asarray(sign, dtype=dt))
    logabs_t = const(xp.asarray(logabs, dtype=dt))
    return _multi(SLOGDET, (sign_t, logabs_t), (A,), (A, sign_t))  # type: ignore[return-value]


@op(linalg="slogdet", grad_fn="LinalgSlogdetBackward0")
def linalg_slogdet(A: Tensor) -> Any:
    """(sign, logabsdet): the sign and the log of the absolute value of det(A), batched.

    Args:
        A (Tensor): a matrix or a batch of them, float32 or float64.

    Returns torch.return_types.linalg_slogdet; the gradient flows through logabsdet (A^{-T}
    times its incoming gradient).

    Example::

        >>> rustgrad.linalg.slogdet(rustgrad.tensor([[0., 2.], [1., 0.]]))
        torch.return_types.linalg_slogdet(
        sign=tensor(-1.),
        logabsdet=tensor(0.6931))
    """
    return return_types.linalg_slogdet(*_slogdet(A, "linalg.slogdet"))


@op(method="slogdet", function="slogdet", grad_fn="LinalgSlogdetBackward0")
def slogdet(input: Tensor) -> Any:
    """(sign, logabsdet) of det(input), as torch.return_types.slogdet (see linalg.slogdet).

    Example::

        >>> rustgrad.tensor([[2., 0.], [0., 3.]]).slogdet().logabsdet
        tensor(1.7918)
    """
    return return_types.slogdet(*_slogdet(input, "linalg.slogdet"))


@op(method="logdet", function="logdet", grad_fn=("WhereBackward0", "LinalgSlogdetBackward0"))
def logdet(input: Tensor) -> Tensor:
    """log(det(input)): NaN where the determinant is negative, -inf where it is 0.

    Example::

        >>> rustgrad.logdet(rustgrad.tensor([[2., 0.], [0., 3.]]))
        tensor(1.7918)
    """
    sign, logabs = _slogdet(input, "logdet")
    return where(sign == -1, math.nan, logabs)


# ---- inv, inv_ex, inverse -----------------------------------------------------------------------
_SINGULAR_INV = ("The diagonal element {} is zero, the inversion could not be completed because "
                 "the input matrix is singular.")


def _inv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    inv_t = saved.inverse.mT
    return -(inv_t @ (g @ inv_t))


INV = node("LinalgInvExBackward0", _inv_bw, saved=("inverse",))


def _inv_array(A: Tensor) -> Tuple[Any, Any]:
    """(inverse, info) of A's matrices: info None when all are invertible; else LAPACK's info
    per matrix. The inverses of singular matrices and of matrices with NaN or inf are NaN."""
    xp, la, d = A._backend, _la(A), A._data
    try:
        with quiet_fp(xp):
            out = la.inv(d)
    except la.LinAlgError:
        out = None
    if out is not None and _all_finite(xp, out):
        return out, None
    # which matrices LU finds singular (exact zero pivots, as getrf), and which are not finite
    info = _lu_info(xp, d)
    bad = (info != 0) | ~xp.isfinite(d).all(axis=(-2, -1))
    if out is None or bool(bad.any()):
        mask = bad[..., None, None]
        with quiet_fp(xp):
            out = la.inv(xp.where(mask, _eye(d, xp, d.shape[-1]), d))
        out = xp.where(mask, xp.nan, out).astype(d.dtype)
    return out, (info if bool((info != 0).any()) else None)


def _inverse(A: Tensor, fname: Optional[str]) -> Tensor:
    """A's inverse recorded as torch's LinalgInvExBackward0; LinAlgError for a singular matrix
    unless fname is None (inside backward formulas: NaN, as torch's unchecked inverse)."""
    out, info = _inv_array(A)
    if info is not None and fname is not None:
        _raise_info(fname, info, A._data.ndim > 2, _SINGULAR_INV.format)
    res = const(out)
    return _multi(INV, (res,), (A,), (res,))[0]


@op(method="inverse", function="inverse", linalg="inv", grad_fn="LinalgInvExBackward0", autocast=dict(cpu="fp32"))
def linalg_inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix of A (..., n, n).

    Args:
        A (Tensor): a matrix or a batch of them, float32 or float64.

    A singular matrix raises rustgrad.linalg.LinAlgError naming it (and its zero pivot), as
    torch. The gradient is -A^{-T} grad A^{-T}.

    Example::

        >>> rustgrad.linalg.inv(rustgrad.tensor([[2., 0.], [0., 4.]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _check_square_float("linalg.inv", A)
    return _inverse(A, "linalg.inv")


@op(linalg="inv_ex", grad_fn="LinalgInvExBackward0", autocast=dict(cpu="fp32"))
def linalg_inv_ex(A: Tensor, *, check_errors: bool = False) -> Any:
    """(inverse, info): A's inverses and LAPACK's int32 info per matrix (0: invertible; k: the
    k-th pivot is zero), without raising unless check_errors.

    Example::

        >>> rustgrad.linalg.inv_ex(rustgrad.tensor([[1., 2.], [2., 4.]])).info
        tensor(2, dtype=torch.int32)
    """
    _check_square_float("linalg.inv", A)
    xp = A._backend
    out, info = _inv_array(A)
    if info is not None and check_errors:
        _raise_info("linalg.inv_ex", info, A._data.ndim > 2, _SINGULAR_INV.format)
    if info is None:
        info = xp.zeros(A._data.shape[:-2], dtype=xp.int32)
    res = const(out)
    inverse = _multi(INV, (res,), (A,), (res,))[0]
    return return_types.linalg_inv_ex(inverse, const(info))


# ---- solve, solve_ex -----------------------------------------------------------------------------
_SINGULAR_SOLVE = "The solver failed because the input matrix is singular."


def _solve_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    left, vector = ctx
    A, X = saved.A, saved.result
    At = A.mT
    gB = _solve_core(At, g, left, vector)
    if left:
        gA = -(gB.unsqueeze(-1) * X.unsqueeze(-2)) if vector else -(gB @ X.mT)
    else:
        gA = -(X.mT @ gB)
    return gA, gB


SOLVE = node("LinalgSolveExBackward0", _solve_bw, saved=("A",), result=True,
             getters={"left": lambda saved, ctx: ctx[0]})


def _solve_arrays(A: Tensor, B: Tensor, left: bool, vector: bool, fname: str) -> Tuple[Any, Any]:
    """(X, info) of A X = B (X A = B unless left), broadcasting the batch dims; info as
    _inv_array's (LAPACK's, per matrix of A's own batch)."""
    xp, la = A._backend, _la(A)
    a, b = A._data, B._data
    n = a.shape[-1]
    bm = b[..., None] if vector else b
    if not left:
        a = a.swapaxes(-1, -2)
        bm = bm.swapaxes(-1, -2)
    if bm.shape[-2] != n:
        rows, cols = (bm.shape[-2], bm.shape[-1]) if left else (bm.shape[-1], bm.shape[-2])
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{fname}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {rows}x{cols})")
    try:
        batch = tuple(xp.broadcast_shapes(a.shape[:-2], bm.shape[:-2]))
    except ValueError as e:
        raise broadcast_error(e, bm.shape[:-2], a.shape[:-2]) from None
    ab = xp.broadcast_to(a, (*batch, n, n))
    bb = xp.broadcast_to(bm, (*batch, *bm.shape[-2:]))
    try:
        with quiet_fp(xp):
            x = la.solve(ab, bb)
    except la.LinAlgError:
        x = None
    info = None
    if x is None or not _all_finite(xp, x):
        # which matrices LU finds singular (as getrf: exact zero pivots), and which are not finite
        info = _lu_info(xp, A._data)
        bad = (info != 0) | ~xp.isfinite(A._data).all(axis=(-2, -1))
        if not bool((info != 0).any()):
            info = None
        if x is None or bool(bad.any()):
            mask = xp.broadcast_to(bad[..., None, None], (*batch, 1, 1))
            with quiet_fp(xp):
                x = la.solve(xp.where(mask, _eye(ab, xp, n), ab), bb)
            x = xp.where(mask, xp.nan, x).astype(a.dtype)
    if not left:
        x = x.swapaxes(-1, -2)
    if vector:
        x = x[..., 0]
    return xp.ascontiguousarray(x), info


def _solve_core(A: Tensor, B: Tensor, left: bool, vector: bool, fname: Optional[str] = None) -> Tensor:
    """X with A X = B (X A = B unless left) recorded as LinalgSolveExBackward0; raises for a
    singular A when fname is given (backward formulas pass None: NaN, as torch's)."""
    x, info = _solve_arrays(A, B, left, vector, fname or "linalg.solve")
    if info is not None and fname is not None:
        _raise_info("torch.linalg.solve", info, A._data.ndim > 2, lambda v: _SINGULAR_SOLVE)
    return SOLVE.record(x, (A, B), (left, vector), A=A)


def _solve_checks(A: Tensor, B: Tensor, fname: str) -> bool:
    """torch's argument checks of linalg.solve; whether B is a (batch of) vector(s)."""
    _check_matrix(fname, A)
    _check_float(fname, A, "lu")
    same_device(A._data, B._data)
    if A._data.dtype != B._data.dtype:
        raise RuntimeError(
            f"{fname}: Expected A and B to have the same dtype, but found A of type "
            f"{_type_name(A._data)} and B of type {_type_name(B._data)} instead")
    a, b = A._data, B._data
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


@op(linalg="solve", grad_fn="LinalgSolveExBackward0", autocast=dict(cpu="fp32"))
def linalg_solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B (X A = B with left=False), for square A, batched and broadcast.

    Args:
        A (Tensor): a matrix or a batch of them (..., n, n).
        B (Tensor): the right-hand side: (..., n, k), or a vector (n,) or batch of vectors
            (..., n) when B's shape is A's without its last dim.
        left (bool, optional): keyword-only; solve A X = B (True) or X A = B. Default: True.

    A singular A raises rustgrad.linalg.LinAlgError, as torch.

    Example::

        >>> A = rustgrad.tensor([[2., 0.], [0., 4.]])
        >>> rustgrad.linalg.solve(A, rustgrad.tensor([2., 2.]))
        tensor([1.0000, 0.5000])
    """
    vector = _solve_checks(A, B, "linalg.solve")
    return _solve_core(A, B, left, vector, "linalg.solve")


@op(linalg="solve_ex", grad_fn="LinalgSolveExBackward0")
def linalg_solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> Any:
    """(result, info): linalg.solve without raising for a singular A (info: LAPACK's int32 per
    matrix of A, NaN in the solutions it could not give) unless check_errors.

    Example::

        >>> rustgrad.linalg.solve_ex(rustgrad.eye(2), rustgrad.ones(2)).info
        tensor(0, dtype=torch.int32)
    """
    vector = _solve_checks(A, B, "linalg.solve")
    x, info = _solve_arrays(A, B, left, vector, "linalg.solve")
    if info is not None and check_errors:
        _raise_info("torch.linalg.solve_ex", info, A._data.ndim > 2, lambda v: _SINGULAR_SOLVE)
    xp = A._backend
    if info is None:
        info = xp.zeros(A._data.shape[:-2], dtype=xp.int32)
    result = SOLVE.record(x, (A, B), (left, vector), A=A)
    return return_types.linalg_solve_ex(result, const(info))


# ---- cholesky, cholesky_ex -----------------------------------------------------------------------
def _cholesky_bw(g: Tensor, saved: Any, upper: bool) -> Any:
    L = saved.L
    if upper:
        L, g = L.mT, g.mT
    # gA = L^{-T} Phi L^{-1}, Phi the symmetric part of tril(L^T gL) with its diagonal halved
    phi = (L.mT @ g).tril()
    phi = 0.5 * (phi + phi.tril(-1).mT)
    x = _solve_core(L.mT, phi, True, False)
    return _solve_core(L, x, False, False)


CHOLESKY = node("LinalgCholeskyExBackward0", _cholesky_bw, saved=("L",),
                getters={"upper": lambda saved, ctx: ctx})

_NOT_PD = ("The factorization could not be completed because the input is not positive-definite "
           "(the leading minor of order {} is not positive-definite).")


def _cholesky_arrays(A: Tensor, upper: bool) -> Tuple[Any, Any]:
    """(factor, info) of A's matrices from the triangle torch reads (lower, upper if upper);
    info None when all are positive-definite, else LAPACK's info and, for the failed matrices,
    LAPACK's partial factor."""
    xp, la, d = A._backend, _la(A), A._data
    tri = xp.triu(d) if upper else xp.tril(d)
    s = tri + (xp.triu(d, 1) if upper else xp.tril(d, -1)).swapaxes(-1, -2)
    try:
        with quiet_fp(xp):
            low = la.cholesky(s)
        ok = _all_finite(xp, low)
        if ok and xp.DEVICE_TYPE != "cpu":
            # cuSOLVER reports a failed factorization only through its info, which CuPy does
            # not raise on: a factor that does not rebuild s marks one
            err = xp.abs(low @ low.swapaxes(-1, -2) - s).max() if s.size else 0
            ok = bool(err <= 1e3 * max(s.shape[-1], 1) * xp.finfo(s.dtype).eps * (xp.abs(s).max() + 1))
    except la.LinAlgError:
        low, ok = None, False
    info = None
    if not ok:
        info, partial = _cholesky_info(xp, s)
        if bool((info != 0).any()):
            bad = (info != 0)[..., None, None]
            with quiet_fp(xp):
                low = la.cholesky(xp.where(bad, _eye(s, xp, s.shape[-1]), s))
            low = xp.where(bad, partial, low).astype(d.dtype)
        else:
            info = None
            if low is None:
                raise LinAlgError("linalg.cholesky: The input is not positive-definite.")
    out = low.swapaxes(-1, -2) if upper else low
    return xp.ascontiguousarray(out), info


def _cholesky_record(A: Tensor, out: Any, upper: bool) -> Tensor:
    res = const(out)
    return _multi(CHOLESKY, (res,), (A,), (res,), upper)[0]


@op(linalg="cholesky", grad_fn="LinalgCholeskyExBackward0", autocast=dict(cpu="fp32"))
def linalg_cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor L (A = L L^T) of each symmetric positive-definite matrix of A.

    Args:
        A (Tensor): a matrix or a batch of them; only its lower triangle is read (the upper
            one with upper=True).
        upper (bool, optional): keyword-only; return U = L^T (A = U^T U) instead. Default:
            False.

    A matrix that is not positive-definite raises rustgrad.linalg.LinAlgError naming the
    order of its first leading minor that is not, as torch.

    Example::

        >>> rustgrad.linalg.cholesky(rustgrad.tensor([[4., 2.], [2., 5.]]))
        tensor([[2., 0.],
                [1., 2.]])
    """
    _check_square_float("linalg.cholesky", A, "cholesky")
    out, info = _cholesky_arrays(A, upper)
    if info is not None:
        _raise_info("linalg.cholesky", info, A._data.ndim > 2, _NOT_PD.format)
    return _cholesky_record(A, out, upper)


@op(linalg="cholesky_ex", grad_fn="LinalgCholeskyExBackward0", autocast=dict(cpu="fp32"))
def linalg_cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> Any:
    """(L, info): linalg.cholesky without raising unless check_errors (info: LAPACK's int32 per
    matrix, the order of the failed leading minor; LAPACK's partial factor where it failed).

    Example::

        >>> rustgrad.linalg.cholesky_ex(rustgrad.tensor([[1., 2.], [2., 1.]])).info
        tensor(2, dtype=torch.int32)
    """
    _check_square_float("linalg.cholesky", A, "cholesky")
    out, info = _cholesky_arrays(A, upper)
    if info is not None and check_errors:
        _raise_info("linalg.cholesky_ex", info, A._data.ndim > 2, _NOT_PD.format)
    xp = A._backend
    if info is None:
        info = xp.zeros(A._data.shape[:-2], dtype=xp.int32)
    return return_types.linalg_cholesky_ex(_cholesky_record(A, out, upper), const(info))


def _removed(what: str) -> RuntimeError:
    return RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {what}")


@op(method="cholesky", function="cholesky", autocast=dict(cpu="fp32"))
def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.cholesky."""
    raise _removed(
        "`torch.cholesky` is deprecated in favor of `torch.linalg.cholesky`.\n"
        "L = torch.cholesky(A) should be replaced with:\nL = torch.linalg.cholesky(A)\n"
        "U = torch.cholesky(A, upper=True) should be replaced with:\nU = torch.linalg.cholesky(A).mH")


@op(method="qr", function="qr", autocast=dict(cpu="fp32"))
def qr(input: Tensor, some: bool = True) -> Any:
    """Removed from torch (since 1.9): raises torch's RuntimeError pointing to linalg.qr."""
    mode = "reduced" if some else "complete"
    raise _removed(
        "`torch.qr` is deprecated in favor of `torch.linalg.qr` and the boolean parameter `some` "
        "has been replaced with a string parameter `mode`.\n\n"
        "Q, R = torch.qr(A) should be replaced with:\nQ, R = torch.linalg.qr(A, mode='reduced')\n\n"
        "and\n\nQ, R = torch.qr(A, some=False) should be replaced with:\n"
        f"Q, R = torch.linalg.qr(A, mode='complete')\n\nSince `some` was set to {some}, use mode='{mode}'.")


# ---- qr ------------------------------------------------------------------------------------------
def _copyltu(m: Tensor) -> Tensor:
    """The symmetric matrix whose lower triangle is m's."""
    return m.tril() + m.tril(-1).mT


def _qr_bw_tall(Q: Tensor, R: Tensor, gQ: Any, gR: Any) -> Tensor:
    """The gradient of A = QR (A m x n, m >= n, Q m x n, R n x n): (gQ + Q copyltu(M)) R^{-T},
    M = R gR^T - gQ^T Q."""
    M = None
    if gR is not None:
        M = R @ gR.mT
    if gQ is not None:
        M = -(gQ.mT @ Q) if M is None else M - gQ.mT @ Q
    b = Q @ _copyltu(M)  # type: ignore[arg-type]
    if gQ is not None:
        b = b + gQ
    return _solve_core(R, b.mT, True, False).mT


def _qr_bw(grads: Any, saved: Any, mode: str) -> Any:
    gQ, gR = grads
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
            "linalg.qr.")
    Q, R = saved.Q, saved.R
    m, n = Q.shape[-2], R.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if gQ is None and gR is None:
        return None
    if m >= n:
        return _qr_bw_tall(Q, R, gQ, gR)
    # wide: A = Q [X | Y] with X square; Y = Q^T V gives V's gradient and adds to Q's
    X, Y = R[..., :, :m], R[..., :, m:]
    gX = None if gR is None else gR[..., :, :m]
    gY = None if gR is None else gR[..., :, m:]
    if gY is not None:
        extra = (Q @ Y) @ gY.mT
        gQ = extra if gQ is None else gQ + extra
    gU = _qr_bw_tall(Q, X, gQ, gX)
    gV = Q @ gY if gY is not None else const(Q._backend.zeros((*gU.shape[:-1], n - m), dtype=Q._data.dtype))
    return cat([gU, gV], -1)


QR = node("LinalgQrBackward0", _qr_bw, saved=("Q", "R"), getters={"mode": lambda saved, ctx: ctx})


@op(linalg="qr", grad_fn="LinalgQrBackward0", autocast=dict(cpu="fp32"))
def linalg_qr(A: Tensor, mode: str = "reduced") -> Any:
    """(Q, R) with A = QR, Q with orthonormal columns and R upper triangular, batched.

    Args:
        A (Tensor): a matrix or a batch of them (..., m, n).
        mode (str, optional): 'reduced' (Q m x k, R k x n, k = min(m, n)), 'complete' (Q m x m,
            R m x n) or 'r' (R only; Q is empty). Default: 'reduced'.

    Returns torch.return_types.linalg_qr. As torch, the gradient is refused for mode='r' and
    for mode='complete' with more rows than columns.

    Example::

        >>> Q, R = rustgrad.linalg.qr(rustgrad.tensor([[3., 1.], [4., 2.]]))
        >>> R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'")
    _check_matrix("linalg.qr", A, square=False)
    _check_float("linalg.qr", A, "geqrf")
    xp, la, d = A._backend, _la(A), A._data
    with quiet_fp(xp):
        if mode == "r":
            q, r = xp.empty((0,), dtype=d.dtype), la.qr(d, mode="r")
        else:
            q, r = la.qr(d, mode=mode)
    Q, R = const(xp.ascontiguousarray(q)), const(xp.ascontiguousarray(r))
    return return_types.linalg_qr(*_multi(QR, (Q, R), (A,), (Q, R), mode))


# ---- svd, svdvals, torch.svd ---------------------------------------------------------------------
def _svd_bw(grads: Any, saved: Any, full_matrices: bool) -> Any:
    gU, gS, gVh = grads
    U, S, Vh = saved.U, saved.S, saved.Vh
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    if full_matrices:  # the gradient of the columns past min(m, n) is not determined: ignored
        U, Vh = U[..., :, :k], Vh[..., :k, :]
        gU = None if gU is None else gU[..., :, :k]
        gVh = None if gVh is None else gVh[..., :k, :]
    if gU is None and gVh is None:
        if gS is None:
            return None
        return (U * gS.unsqueeze(-2)) @ Vh
    # gA = U [(skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)] V^T
    #      + (I - U U^T) gU S^{-1} V^T + U S^{-1} gV^T (I - V V^T),  E_ij = s_j^2 - s_i^2
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1)
    eye = const(S._backend.eye(k, dtype=S._data.dtype))
    E = E + eye
    inner = None
    UhgU = VhgV = None
    if gU is not None:
        UhgU = U.mT @ gU
        inner = (UhgU - UhgU.mT) * S.unsqueeze(-2)
    if gVh is not None:
        VhgV = Vh @ gVh.mT
        part = S.unsqueeze(-1) * (VhgV - VhgV.mT)
        inner = part if inner is None else inner + part
    inner = inner / E  # type: ignore[operator]
    if gS is not None:
        inner = inner + gS.diag_embed()
    gA = U @ (inner @ Vh)
    if gU is not None and m > k:
        gA = gA + ((gU - U @ UhgU) / S.unsqueeze(-2)) @ Vh
    if gVh is not None and n > k:
        gA = gA + U @ ((gVh - VhgV.mT @ Vh) / S.unsqueeze(-1))  # type: ignore[union-attr]
    return gA


SVD = node("LinalgSvdBackward0", _svd_bw, saved=("U", "S", "Vh"),
           getters={"full_matrices": lambda saved, ctx: ctx,
                    "S_sym_argsize_minus_1": lambda saved, ctx: saved[1].shape[-1]})


def _check_driver(A: Tensor, driver: Any) -> None:
    if driver is not None and A._backend.DEVICE_TYPE == "cpu":
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on CUDA "
                           "inputs with cuSOLVER backend.")


def _svd(A: Tensor, full_matrices: bool, fname: str) -> Tuple[Tensor, Tensor, Tensor]:
    _check_matrix(fname, A, square=False)
    _check_float(fname, A, "linalg_svd")
    xp, la = A._backend, _la(A)
    with quiet_fp(xp):
        u, s, vh = la.svd(A._data, full_matrices=full_matrices)
    outs = tuple(const(xp.ascontiguousarray(x)) for x in (u, s, vh))
    return _multi(SVD, outs, (A,), outs, full_matrices)  # type: ignore[return-value]


@op(linalg="svd", grad_fn="LinalgSvdBackward0", autocast=dict(cpu="fp32"))
def linalg_svd(A: Tensor, full_matrices: bool = True, *, driver: Any = None) -> Any:
    """(U, S, Vh) with A = U diag(S) Vh, S descending, batched.

    Args:
        A (Tensor): a matrix or a batch of them (..., m, n).
        full_matrices (bool, optional): U m x m and Vh n x n (True) or m x k and k x n, k =
            min(m, n). Default: True.
        driver (str, optional): keyword-only; cuSOLVER's algorithm on CUDA (refused on the CPU,
            as torch). CuPy picks its own.

    Returns torch.return_types.linalg_svd. Singular vectors are defined up to sign, which may
    differ from torch's LAPACK; the gradient is torch's (undefined for repeated singular
    values; with full_matrices the extra columns' gradient is ignored).

    Example::

        >>> rustgrad.linalg.svd(rustgrad.tensor([[3., 0.], [0., -2.]])).S
        tensor([3., 2.])
    """
    _check_driver(A, driver)
    return return_types.linalg_svd(*_svd(A, full_matrices, "linalg.svd"))


@op(linalg="svdvals", grad_fn="LinalgSvdBackward0", autocast=dict(cpu="fp32"))
def linalg_svdvals(A: Tensor, *, driver: Any = None) -> Tensor:
    """The singular values of A, descending, batched (the S of linalg.svd).

    Example::

        >>> rustgrad.linalg.svdvals(rustgrad.tensor([[0., 2.], [1., 0.]]))
        tensor([2., 1.])
    """
    _check_driver(A, driver)
    if _needs_grad(A):
        return _svd(A, False, "linalg.svd")[1]
    _check_matrix("linalg.svd", A, square=False)
    _check_float("linalg.svd", A, "linalg_svd")
    xp = A._backend
    with quiet_fp(xp):
        return const(xp.ascontiguousarray(_la(A).svd(A._data, compute_uv=False)))


@op(method="svd", function="svd", grad_fn=("LinalgSvdBackward0", "TransposeBackward0"), autocast=dict(cpu="fp32"))
def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> Any:
    """torch.svd: (U, S, V) with input = U diag(S) V^T (V, not Vh), reduced unless some=False.

    Args:
        input (Tensor): a matrix or a batch of them.
        some (bool, optional): the reduced factors (True) or the full ones. Default: True.
        compute_uv (bool, optional): with False, U and V are zero matrices of the full shapes
            and only S is computed. Default: True.

    Example::

        >>> rustgrad.svd(rustgrad.tensor([[2., 0.], [0., 1.]])).S
        tensor([2., 1.])
    """
    if compute_uv:
        U, S, Vh = _svd(input, not some, "linalg.svd")
        return return_types.svd(U, S, Vh.mT)
    S = linalg_svdvals(input)
    d, xp = input._data, input._backend
    m, n = d.shape[-2], d.shape[-1]
    # torch fills them in place (version 1)
    U = const(xp.empty((*d.shape[:-2], m, m), dtype=d.dtype)).zero_()
    V = const(xp.empty((*d.shape[:-2], n, n), dtype=d.dtype)).zero_().mT
    return return_types.svd(U, S, V)


# ---- eigh, eigvalsh ------------------------------------------------------------------------------
def _eigh_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gL, gV = grads
    L, V = saved.eigenvalues, saved.eigenvectors
    if gV is None:
        if gL is None:
            return None
        return (V * gL.unsqueeze(-2)) @ V.mT
    # gA = V (diag(gL) + skew(V^T gV) / E) V^T, E_ij = L_j - L_i (1 on the diagonal)
    k = L.shape[-1]
    eye = const(L._backend.eye(k, dtype=L._data.dtype))
    E = L.unsqueeze(-2) - L.unsqueeze(-1) + eye
    VhgV = V.mT @ gV
    inner = 0.5 * (VhgV - VhgV.mT) / E
    if gL is not None:
        inner = inner + gL.diag_embed()
    return V @ (inner @ V.mT)


EIGH = node("LinalgEighBackward0", _eigh_bw, saved=("eigenvalues", "eigenvectors"))


def _eigh_checks(A: Tensor, UPLO: str) -> None:  # noqa: N803  (torch's name)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    _check_matrix("linalg.eigh", A)
    _check_float("linalg.eigh", A, "linalg_eigh", any_dtype=True)


def _eigh(A: Tensor, UPLO: str) -> Tuple[Tensor, Tensor]:  # noqa: N803  (torch's name)
    _eigh_checks(A, UPLO)
    xp = A._backend
    with quiet_fp(xp):
        w, v = _la(A).eigh(A._data, UPLO=UPLO)
    L, V = const(xp.ascontiguousarray(w)), const(xp.ascontiguousarray(v))
    return _multi(EIGH, (L, V), (A,), (L, V))  # type: ignore[return-value]


@op(linalg="eigh", grad_fn="LinalgEighBackward0", autocast=dict(cpu="fp32"))
def linalg_eigh(A: Tensor, UPLO: str = "L") -> Any:  # noqa: N803  (torch's name)
    """(eigenvalues, eigenvectors) of each symmetric matrix of A, eigenvalues ascending.

    Args:
        A (Tensor): a matrix or a batch of them; only the triangle UPLO names is read.
        UPLO (str, optional): 'L' (the lower triangle) or 'U'. Default: 'L'.

    Returns torch.return_types.linalg_eigh. Eigenvectors are defined up to sign; the gradient
    is torch's (undefined for repeated eigenvalues).

    Example::

        >>> rustgrad.linalg.eigh(rustgrad.tensor([[2., 1.], [1., 2.]])).eigenvalues
        tensor([1., 3.])
    """
    return return_types.linalg_eigh(*_eigh(A, UPLO))


@op(linalg="eigvalsh", grad_fn="LinalgEighBackward0", autocast=dict(cpu="fp32"))
def linalg_eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:  # noqa: N803  (torch's name)
    """The eigenvalues of each symmetric matrix of A, ascending (those of linalg.eigh).

    Example::

        >>> rustgrad.linalg.eigvalsh(rustgrad.tensor([[2., 1.], [1., 2.]]))
        tensor([1., 3.])
    """
    if _needs_grad(A):
        return _eigh(A, UPLO)[0]
    _eigh_checks(A, UPLO)
    xp = A._backend
    with quiet_fp(xp):
        return const(xp.ascontiguousarray(_la(A).eigvalsh(A._data, UPLO=UPLO)))


# ---- pinv, pinverse, matrix_rank -----------------------------------------------------------------
def _tolerance(A: Tensor, top: Any, atol: Any, rtol: Any) -> Any:
    """max(atol, rtol * top) per matrix, with torch's defaults: rtol = eps * max(m, n) unless
    atol is given and positive (then rtol = 0). atol and rtol: numbers or tensors."""
    xp, d = A._backend, A._data
    default = xp.finfo(d.dtype).eps * max(d.shape[-2], d.shape[-1])
    a = 0.0 if atol is None else (atol._data if isinstance(atol, Tensor) else atol)
    if rtol is not None:
        r = rtol._data if isinstance(rtol, Tensor) else rtol
    elif atol is None:
        r = default
    else:
        r = xp.where(xp.asarray(a) > 0, 0.0, default)
    return xp.maximum(a, r * top)


def _spectrum(A: Tensor, hermitian: bool) -> Tuple[Any, Any, Any, Any]:
    """(values, top, U, Vh): singular values (|eigenvalues| if hermitian, then U = V and Vh
    = V^T with the signs in values), their largest per matrix (0 for empty)."""
    xp, la, d = A._backend, _la(A), A._data
    if hermitian:
        _check_matrix("linalg.eigh", A)
    with quiet_fp(xp):
        if hermitian:
            w, v = la.eigh(d)
            mags = xp.abs(w)
            u, vh = v, v.swapaxes(-1, -2)
        else:
            u, w, vh = la.svd(d, full_matrices=False)
            mags = w
    top = mags.max(-1) if mags.shape[-1] else xp.zeros(mags.shape[:-1], dtype=mags.dtype)
    return w, top, u, vh


def _pinv_grad(g: Tensor, P: Tensor, A: Tensor) -> Tensor:
    """The gradient of P = pinv(A) (constant rank): -P^T g P^T + (I - A P) g^T P P^T
    + P^T P g^T (I - P A)."""
    gt = g.mT
    out = -(P.mT @ (g @ P.mT))
    out = out + (gt - A @ (P @ gt)) @ (P @ P.mT)
    return out + (P.mT @ P) @ (gt - (gt @ P) @ A)


def _pinv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _pinv_grad(g, saved.result, saved.self)


PINV = node("LinalgPinvBackward0", _pinv_bw, saved=("self",), result=True)


@op(linalg="pinv", grad_fn="LinalgPinvBackward0")
def linalg_pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudoinverse of each matrix of A (..., m, n), through its SVD.

    Args:
        A (Tensor): a matrix or a batch of them.
        rcond (float or Tensor, optional): the older spelling of rtol (then atol = 0).
        hermitian (bool, optional): A is symmetric: use its eigendecomposition. Default: False.
        atol, rtol (float or Tensor, optional): keyword-only; singular values at most
            max(atol, rtol * the largest) are dropped. Default: rtol = eps * max(m, n), or 0
            when atol > 0 is given.

    Example::

        >>> rustgrad.linalg.pinv(rustgrad.tensor([[1., 0.], [0., 0.]]))
        tensor([[1., 0.],
                [0., 0.]])
    """
    d = A._data
    if d.ndim < 2 or not _dtype.is_floating_np(d.dtype) or d.dtype.itemsize < 4:
        shape = ", ".join(str(s) for s in d.shape)
        raise RuntimeError(
            f"linalg.pinv({_type_name(d)}{{[{shape}]}}): expected a tensor with 2 or more "
            "dimensions of float, double, cfloat or cdouble types")
    if rcond is not None:
        atol, rtol = 0.0, rcond
    xp = A._backend
    w, top, u, vh = _spectrum(A, hermitian)
    tol = _tolerance(A, top, atol, rtol)
    keep = (xp.abs(w) if hermitian else w) > xp.asarray(tol)[..., None]
    with quiet_fp(xp):
        inv_w = xp.where(keep, 1 / xp.where(keep, w, 1), 0).astype(d.dtype)
    out = (vh.swapaxes(-1, -2) * inv_w[..., None, :]) @ u.swapaxes(-1, -2)
    return PINV.record(xp.ascontiguousarray(out.astype(d.dtype)), (A,), self=A)


@op(method="pinverse", function="pinverse", grad_fn="LinalgPinvBackward0", autocast=dict(cpu="fp32"))
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudoinverse of input, dropping singular values at most rcond times the largest
    (linalg.pinv with rtol=rcond).

    Example::

        >>> rustgrad.tensor([[2., 0.], [0., 4.]]).pinverse()
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    return linalg_pinv(input, rcond)


@op(linalg="matrix_rank", autocast=dict(cpu="fp32"))
def linalg_matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                       rtol: Any = None) -> Tensor:
    """The numerical rank of each matrix of A: how many singular values exceed the tolerance
    (int64, no gradient).

    Args:
        A (Tensor): a matrix or a batch of them.
        tol (float or Tensor, optional): the older spelling of atol (then rtol = 0).
        hermitian (bool, optional): A is symmetric: count its eigenvalues' magnitudes. Default:
            False.
        atol, rtol (float or Tensor, optional): keyword-only; as linalg.pinv's.

    Example::

        >>> rustgrad.linalg.matrix_rank(rustgrad.tensor([[1., 2.], [2., 4.]]))
        tensor(1)
    """
    d = A._data
    if d.ndim < 2:
        raise RuntimeError(
            "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if not _dtype.is_floating_np(d.dtype) or d.dtype.itemsize < 4:
        raise RuntimeError("This function doesn't handle types other than float and double")
    if tol is not None:
        atol, rtol = tol, 0.0
    xp = A._backend
    w, top, _, _ = _spectrum(A, hermitian)
    tol_ = _tolerance(A, top, atol, rtol)
    mags = xp.abs(w) if hermitian else w
    count = (mags > xp.asarray(tol_)[..., None]).sum(-1).astype(_dtype.int64.np)
    # torch's count is written into its result (version 1)
    return const(xp.empty_like(count)).copy_(const(count))


# ---- lstsq ---------------------------------------------------------------------------------------
def _lstsq_bw(grads: Any, saved: Any, vector: bool) -> Any:
    gX, gR = grads
    A, B, X = saved.self, saved.b, saved.solution
    if vector:
        B, X = B.unsqueeze(-1), X.unsqueeze(-1)
        gX = None if gX is None else gX.unsqueeze(-1)
    gA = gB = None
    if gX is not None:
        P = linalg_pinv(A)
        gA = _pinv_grad(gX @ B.mT, P, A)
        gB = P.mT @ gX
    if gR is not None and gR.numel():
        # residuals r_j = |A x_j - b_j|^2 at the minimiser: dr/dA = 2 (A x - b) x^T, dr/db = -2 (A x - b)
        res = (A @ X - B) * gR.unsqueeze(-2)
        rA, rB = 2 * (res @ X.mT), -2 * res
        gA = rA if gA is None else gA + rA
        gB = rB if gB is None else gB + rB
    if vector and gB is not None:
        gB = gB.squeeze(-1)
    return gA, gB


LSTSQ = node("LinalgLstsqBackward0", _lstsq_bw, saved=("b", "self", "solution"))
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


@op(linalg="lstsq", grad_fn="LinalgLstsqBackward0", autocast=dict(cpu="fp32"))
def linalg_lstsq(A: Tensor, B: Tensor, rcond: Optional[float] = None, *, driver: Optional[str] = None) -> Any:
    """(solution, residuals, rank, singular_values): the least-squares solution X minimising
    |A X - B| (the minimum-norm one when A is rank-deficient), batched and broadcast.

    Args:
        A (Tensor): (..., m, n).
        B (Tensor): (..., m, k), or (..., m) for vectors.
        rcond (float, optional): singular values below rcond times the largest count as zero.
            Default: eps * max(m, n).
        driver (str, optional): keyword-only; LAPACK's driver torch would call, which decides
            what is returned beside the solution: 'gelsy' (the CPU default: rank), 'gelsd' and
            'gelss' (rank, singular values, residuals when m > n and A has full rank), 'gels'
            (the only one on CUDA: residuals when m > n). Each is solved here through the SVD.

    Example::

        >>> A = rustgrad.tensor([[1., 0.], [0., 1.], [0., 0.]])
        >>> rustgrad.linalg.lstsq(A, rustgrad.tensor([[1.], [2.], [3.]])).solution
        tensor([[1.],
                [2.]])
    """
    a, b = A._data, B._data
    if a.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if b.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    for t in (A, B):
        if not _dtype.is_floating_np(t._data.dtype) or t._data.dtype.itemsize < 4:
            raise RuntimeError("This function doesn't handle types other than float and double")
    same_device(a, b)
    if a.dtype != b.dtype:
        raise RuntimeError(
            "torch.linalg.lstsq: Expected input and other to have the same dtype, but got input's "
            f"dtype {_type_name(a)} and other's dtype {_type_name(b)}")
    if not (a.ndim >= b.ndim and a.ndim - b.ndim <= 1):
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() "
                           "and (input.dim() - other.dim()) <= 1")
    vector = b.ndim == a.ndim - 1
    bm = b[..., None] if vector else b
    xp, la = A._backend, _la(A)
    try:
        batch = tuple(xp.broadcast_shapes(a.shape[:-2], bm.shape[:-2]))
    except ValueError as e:
        raise broadcast_error(e, a.shape[:-2], bm.shape[:-2]) from None
    if a.shape[-2] != bm.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    on_cpu = xp.DEVICE_TYPE == "cpu"
    if driver is None:
        driver = "gelsy" if on_cpu else "gels"
    elif driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")
    elif not on_cpu and driver != "gels":
        raise RuntimeError("torch.linalg.lstsq: `driver` other than `gels` is not supported on CUDA")
    m, n = a.shape[-2], a.shape[-1]
    bb = xp.broadcast_to(bm, (*batch, *bm.shape[-2:]))
    with quiet_fp(xp):
        # A's own SVD (rank and singular values are A's, unbroadcast, as torch's), then X = V
        # diag(1/s) U^T B over the broadcast batch
        u, s, vh = la.svd(a, full_matrices=False)
        top = s[..., :1] if s.shape[-1] else xp.zeros((*s.shape[:-1], 1), dtype=s.dtype)
        cut = (xp.finfo(a.dtype).eps * max(m, n) if rcond is None or rcond < 0 else rcond) * top
        keep = s > cut
        inv_s = xp.where(keep, 1 / xp.where(keep, s, 1), 0).astype(a.dtype)
        x = vh.swapaxes(-1, -2) @ (inv_s[..., None] * (u.swapaxes(-1, -2) @ bb))
        rank = keep.sum(-1).astype(_dtype.int64.np)
        residuals = xp.empty((0,), dtype=a.dtype)
        if m > n and driver != "gelsy" and (driver == "gels" or bool((rank == n).all())):
            residuals = ((a @ x - bb) ** 2).sum(-2)
    x = xp.ascontiguousarray(x[..., 0] if vector else x)
    X, R = const(x), const(xp.ascontiguousarray(residuals.astype(a.dtype)))
    X, R = _multi(LSTSQ, (X, R), (A, B), (B, A, X), vector)
    if driver == "gels":
        rank = xp.empty((0,), dtype=_dtype.int64.np)
    sv = s if driver in ("gelsd", "gelss") else xp.empty((0,), dtype=a.dtype)
    return return_types.linalg_lstsq(X, R, const(rank), const(xp.ascontiguousarray(sv)))


# ---- matrix_power, matrix_exp --------------------------------------------------------------------
@op(method="matrix_power", function="matrix_power", linalg="matrix_power",
    grad_fn=("MmBackward0", "UnsafeViewBackward0", "CloneBackward0", "LinalgInvExBackward0",
             "torch::autograd::CopyBackwards"))
def matrix_power(A: Tensor, n: int) -> Tensor:
    """A to the integer power n (A^{-1} to the power -n for negative n), by repeated squaring.

    Args:
        A (Tensor): a square matrix or a batch of them (any dtype for n >= 0).
        n (int): the exponent; 0 gives identities.

    Example::

        >>> rustgrad.linalg.matrix_power(rustgrad.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    _check_matrix("linalg.matrix_power", A)
    if n == 0:
        return A.clone().copy_(_eye_t(A))
    if n < 0:
        A = linalg_inv(A)
        if n == -1:
            return A
        n = -n
    if n == 1:
        return A.clone()
    if n == 2:
        return A @ A
    if n == 3:
        return (A @ A) @ A
    z = result = None
    while n > 0:  # binary powering from the least significant bit
        bit, n = n % 2, n // 2
        z = A if z is None else z @ z
        if bit:
            result = z if result is None else result @ z
    return result  # type: ignore[return-value]


# Higham's scaling and squaring with the [13/13] Pade approximant (2005), in float64
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _expm_array(xp: Any, la: Any, a: Any) -> Any:
    """exp of each matrix of the batch a (..., n, n), computed in float64."""
    d = a.astype(xp.float64)
    n = d.shape[-1]
    if d.size == 0:
        return d.astype(a.dtype)
    norm1 = xp.abs(d).sum(-2).max(-1)
    with quiet_fp(xp):
        s = xp.where(xp.isfinite(norm1) & (norm1 > _THETA13),
                     xp.ceil(xp.log2(xp.where(norm1 > 0, norm1, 1) / _THETA13)), 0).astype(xp.int64)
        steps = int(s.max()) if s.size else 0
        d = d / (2.0 ** s)[..., None, None]
        eye = _eye(d, xp, n)
        b = _PADE13
        d2 = d @ d
        d4 = d2 @ d2
        d6 = d4 @ d2
        u = d @ (d6 @ (b[13] * d6 + b[11] * d4 + b[9] * d2) + b[7] * d6 + b[5] * d4 + b[3] * d2 + b[1] * eye)
        v = d6 @ (b[12] * d6 + b[10] * d4 + b[8] * d2) + b[6] * d6 + b[4] * d4 + b[2] * d2 + b[0] * eye
        r = la.solve(v - u, v + u)
        for i in range(steps):
            r = xp.where((s > i)[..., None, None], r @ r, r)
    return r.astype(a.dtype)


def _matrix_exp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the Frechet derivative's adjoint: the top-right block of exp([[A^T, g], [0, A^T]])
    At = saved.self.mT
    n = At.shape[-1]
    zeros = const(At._backend.zeros(tuple(g.shape), dtype=g._data.dtype))
    block = cat([cat([At.expand(tuple(g.shape)), g], -1), cat([zeros, At.expand(tuple(g.shape))], -1)], -2)
    return linalg_matrix_exp(block)[..., :n, n:]


MATRIX_EXP = node("LinalgMatrixExpBackward0", _matrix_exp_bw, saved=("self",))


@op(method="matrix_exp", function="matrix_exp", linalg="matrix_exp", grad_fn="LinalgMatrixExpBackward0")
def linalg_matrix_exp(A: Tensor) -> Tensor:
    """The matrix exponential of each square matrix of A (scaling and squaring, Pade 13).

    Example::

        >>> rustgrad.linalg.matrix_exp(rustgrad.tensor([[0., 1.], [0., 0.]]))
        tensor([[1., 1.],
                [0., 1.]])
    """
    _check_matrix("linalg.matrix_exp", A)
    d = A._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(
            f"linalg.matrix_exp: Expected a floating point or complex tensor as input. Got {_type_name(d)}")
    xp = A._backend
    return MATRIX_EXP.record(_expm_array(xp, _la(A), d), (A,), self=A)


# ---- norms ---------------------------------------------------------------------------------------
@op(linalg="vector_norm", grad_fn="LinalgVectorNormBackward0", autocast=dict(cuda="fp32_set_opt_dtype"))
def linalg_vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                       dtype: Any = None) -> Tensor:
    """The vector ord-norm of x over dim (all entries by default): sum(|x|^ord)^(1/ord), max
    |x| for inf, min for -inf, the count of nonzeros for 0.

    Example::

        >>> rustgrad.linalg.vector_norm(rustgrad.tensor([3., -4.]))
        tensor(5.)
    """
    return _reduce_vector_norm(x, ord, dim, keepdim, dtype=dtype)


def _ord_str(ord: Any) -> str:
    if isinstance(ord, float) and ord.is_integer():
        return str(int(ord))
    return str(ord)


def _svd_norm(A: Tensor, d0: int, d1: int, keepdim: bool, reduce: str) -> Tensor:
    nd = A._data.ndim
    perm = [i for i in range(nd) if i not in (d0, d1)] + [d0, d1]
    s = linalg_svdvals(A.permute(*perm))
    out = s.sum(-1) if reduce == "sum" else s.amax(-1) if reduce == "max" else s.amin(-1)
    if keepdim:
        inverse = [perm.index(i) for i in range(nd)]
        out = out.unsqueeze(-1).unsqueeze(-1).permute(*inverse)
    return out


@op(linalg="matrix_norm", grad_fn=("LinalgVectorNormBackward0", "SumBackward1", "AmaxBackward0",
                                   "AminBackward0", "PermuteBackward0"), autocast=dict(cuda="fp32_set_opt_dtype"))
def linalg_matrix_norm(A: Tensor, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False, *,
                       dtype: Any = None) -> Tensor:
    """The matrix norm of A over the two dims `dim`: 'fro', 'nuc' (the sum of the singular
    values), 2 / -2 (the largest / smallest singular value), 1 / -1 (max / min column sum of
    |A|), inf / -inf (max / min row sum).

    Example::

        >>> rustgrad.linalg.matrix_norm(rustgrad.tensor([[1., -2.], [3., 4.]]), 1)
        tensor(6.)
    """
    d = A._data
    if d.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(
            f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {_type_name(d)}")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + " ".join(str(x) for x in dims))
    d0, d1 = (_wrap_dim(x, d.ndim) for x in dims)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if dtype is not None:
        if _dtype.promote_types(A.dtype, dtype) != dtype:
            raise RuntimeError(
                f"linalg.matrix_norm: the dtype of the input ({_type_name(d)}) should be "
                f"convertible without narrowing to the specified dtype ({_dtype.scalar_type_name(dtype)})")
    if isinstance(ord, str):
        if ord == "fro":
            return _reduce_vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
        if ord != "nuc":
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        _check_float("linalg.matrix_norm", A)
        return _svd_norm(A if dtype is None else A.to(dtype), d0, d1, keepdim, "sum")
    size = abs(ord)
    if size not in (1, 2, math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {_ord_str(ord)} not supported.")
    if dtype is not None:
        A = A.to(dtype)
    if size == 2:
        _check_float("linalg.matrix_norm", A)
        return _svd_norm(A, d0, d1, keepdim, "max" if ord > 0 else "min")
    if size == math.inf:
        d0, d1 = d1, d0
    if not keepdim and d0 < d1:
        d1 -= 1
    sums = _reduce_vector_norm(A, 1, d0, keepdim)
    return sums.amax(d1, keepdim) if ord > 0 else sums.amin(d1, keepdim)


@op(linalg="norm", grad_fn=("LinalgVectorNormBackward0", "SumBackward1", "AmaxBackward0",
                            "AminBackward0", "PermuteBackward0"))
def linalg_norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    """A vector norm (dim an int, or A 1-D) or a matrix norm (dim a 2-tuple, or A 2-D) of A;
    with neither ord nor dim, the 2-norm of all entries.

    Example::

        >>> rustgrad.linalg.norm(rustgrad.tensor([[1., 2.], [2., 4.]]))
        tensor(5.)
    """
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        if isinstance(ord, str) or (ord is not None and len(dims) == 2):
            return linalg_matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return _reduce_vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return _reduce_vector_norm(A, 2, None, keepdim, dtype=dtype)
    nd = A._data.ndim
    if isinstance(ord, str) or nd == 2:
        return linalg_matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if nd != 1:
        raise RuntimeError(
            f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {nd}D.")
    return _reduce_vector_norm(A, ord, None, keepdim, dtype=dtype)


# ---- cross, vecdot, multi_dot --------------------------------------------------------------------
def _cross_bw(g: Tensor, saved: Any, dim: int) -> Any:
    a, b = saved.self, saved.other
    ga = linalg_cross(b, g, dim=dim) if a.requires_grad else None
    gb = linalg_cross(g, a, dim=dim) if b.requires_grad else None
    return ga, gb


CROSS = node("LinalgCrossBackward0", _cross_bw, saved=("self", "other"),
             getters={"dim": lambda saved, ctx: ctx})


@op(linalg="cross", grad_fn="LinalgCrossBackward0")
def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along dim, broadcast over the other dims.

    Example::

        >>> rustgrad.linalg.cross(rustgrad.tensor([1., 0., 0.]), rustgrad.tensor([0., 1., 0.]))
        tensor([0., 0., 1.])
    """
    a, b = input._data, other._data
    same_device(a, b)
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_type_name(a)} but found {_type_name(b)}")
    if a.dtype.kind == "b":
        raise NotImplementedError("\"cross\" not implemented for 'Bool'")
    d = _wrap_dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[d]} and {b.shape[d]}")
    check_broadcastable(a.shape, b.shape)
    xp = input._backend
    x, y = xp.moveaxis(a, d, -1), xp.moveaxis(b, d, -1)
    parts = [x[..., 1] * y[..., 2] - x[..., 2] * y[..., 1],
             x[..., 2] * y[..., 0] - x[..., 0] * y[..., 2],
             x[..., 0] * y[..., 1] - x[..., 1] * y[..., 0]]
    out = xp.ascontiguousarray(xp.moveaxis(xp.stack(parts, axis=-1), -1, d)).astype(a.dtype, copy=False)
    return CROSS.record(out, (input, other), d, self=input, other=other)


@op(method="cross", function="cross", grad_fn="LinalgCrossBackward0", autocast=dict(cuda="promote"))
def cross(input: Tensor, other: Tensor, dim: Optional[int] = None) -> Tensor:
    """torch.cross: linalg.cross along dim; without dim (deprecated, with torch's warning) along
    the first dim of input of size 3.

    Example::

        >>> rustgrad.cross(rustgrad.tensor([0., 1., 0.]), rustgrad.tensor([0., 0., 1.]), dim=0)
        tensor([1., 0., 0.])
    """
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass "
            "the dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will "
            "change to agree with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        sizes = input._data.shape
        if 3 not in sizes:
            raise RuntimeError("no dimension of size 3 in input")
        dim = list(sizes).index(3)
    return linalg_cross(input, other, dim=dim)


@op(linalg="vecdot", grad_fn=("SumBackward1", "MulBackward0"), autocast=dict(cuda="lower", cpu="lower"))
def linalg_vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of x and y along dim, broadcast over the other dims.

    Example::

        >>> rustgrad.linalg.vecdot(rustgrad.tensor([[1., 2.], [3., 4.]]), rustgrad.tensor([1., 1.]))
        tensor([3., 7.])
    """
    for t in (x, y):
        if not _dtype.is_floating_np(t._data.dtype):
            raise NotImplementedError(
                "linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                f"{_type_name(t._data)}")
    if x._data.dtype != y._data.dtype:
        raise RuntimeError(
            "linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
            f"{_type_name(x._data)} and y of type {_type_name(y._data)} instead")
    return (x * y).sum(dim)


def _chain(ts: List[Tensor], order: Any, i: int, j: int) -> Tensor:
    if i == j:
        return ts[i]
    k = order[i][j]
    return _chain(ts, order, i, k).mm(_chain(ts, order, k + 1, j))


@op(linalg="multi_dot", grad_fn=("ViewBackward0", "MmBackward0"), autocast=dict(cuda="lower"))
def linalg_multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of two or more matrices in the cheapest order (the first may be a row
    vector, the last a column vector, 1-D each).

    Example::

        >>> A = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> rustgrad.linalg.multi_dot([rustgrad.tensor([1., 1.]), A, rustgrad.tensor([1., 0.])])
        tensor(4.)
    """
    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    first, last = ts[0]._data.ndim, ts[-1]._data.ndim
    if first not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first}D")
    if last not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last}D")
    for i in range(1, n - 1):
        if ts[i]._data.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i]._data.ndim}D")
    dt = ts[0]._data.dtype
    for i, t in enumerate(ts):
        same_device(ts[0]._data, t._data)
        if t._data.dtype != dt:
            raise RuntimeError(
                f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_dtype.cpp_name(_dtype.from_np(dt))} and tensor {i} "
                f"{_dtype.cpp_name(_dtype.from_np(t._data.dtype))}")
    shapes = [list(t._data.shape) for t in ts]
    out_shape: Tuple[int, ...] = ()
    if first == 2:
        out_shape += (ts[0]._data.shape[0],)
    else:
        ts[0] = ts[0].unsqueeze(0)
    if last == 2:
        out_shape += (ts[-1]._data.shape[1],)
    else:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(n - 1):
        sa, sb = ts[i]._data.shape, ts[i + 1]._data.shape
        if sa[1] != sb[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {shapes[i]} and {shapes[i + 1]} "
                "cannot be multiplied")
    if n == 2:
        out = ts[0].mm(ts[1])
    elif n == 3:
        a, b = ts[0]._data.shape
        c, d = ts[2]._data.shape
        if a * c * (b + d) > b * d * (a + c):
            out = ts[0].mm(ts[1].mm(ts[2]))
        else:
            out = ts[0].mm(ts[1]).mm(ts[2])
    else:
        # the classic dynamic programme over split points (the first cheapest split wins)
        p = [ts[0]._data.shape[0]] + [t._data.shape[1] for t in ts]
        cost = [[0] * n for _ in range(n)]
        order = [[0] * n for _ in range(n)]
        for span in range(1, n):
            for i in range(n - span):
                j = i + span
                cost[i][j] = -1
                for k in range(i, j):
                    q = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                    if cost[i][j] < 0 or q < cost[i][j]:
                        cost[i][j], order[i][j] = q, k
        out = _chain(ts, order, 0, n - 1)
    return out.view(out_shape)
