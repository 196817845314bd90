"""The rest of torch's BLAS-like surface: addmv, addr, addbmm and the in-place forms of them and of
addmm/baddbmm; inner, vdot, chain_matmul, diagflat, vander; the adjoints (Tensor.H, Tensor.mH,
adjoint) and renorm_. Shapes, dtypes and messages are torch's: addmv and addbmm want one dtype,
addr promotes its operands (and takes bool), integer inputs take integer multipliers."""

from __future__ import annotations

import warnings
from typing import Any, List, Optional

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import check_inplace_cast, const, opmath, quiet_fp, same_device
from .copies import clone, flip
from .copyslices import inplace_from
from .decompositions import linalg_multi_dot
from .linalg import (
    _addmm_checks,
    _check_dot,
    _expanded_shape,
    _no_bool,
    _scalar_name,
    addmm,
    baddbmm,
    diag,
    mv,
    outer,
    tensordot,
)
from .reduce import cumprod, renorm
from .views import transpose


# ---- shared helpers ------------------------------------------------------------------------
def _product(xp: Any, a: Any, b: Any) -> Any:
    """a @ b in the operands' dtype, low-precision floats accumulated in float32 (as torch's CPU
    kernels) and rounded once."""
    out = xp.matmul(opmath(a), opmath(b))
    return out if out.dtype == a.dtype else out.astype(a.dtype)


def _scale(beta: Any, alpha: Any, dt: Any) -> Any:
    """The multipliers as the kernel of an integer dtype takes them: truncated to integers."""
    if dt.kind in "iu":
        return int(beta), int(alpha)
    return beta, alpha


def _combine(xp: Any, inp: Any, prod: Any, beta: Any, alpha: Any, shape: Any) -> Any:
    """beta * inp + alpha * prod at `shape` in prod's dtype; beta == 0 ignores inp (a NaN in it
    too), as BLAS does."""
    dt = prod.dtype
    beta, alpha = _scale(beta, alpha, dt)
    with quiet_fp(xp):
        out = prod if alpha == 1 else prod * alpha
        if beta != 0:
            out = out + (inp if beta == 1 else inp * beta)
    return xp.ascontiguousarray(xp.broadcast_to(out, shape).astype(dt, copy=False))


def _check_inplace_shape(self: Tensor, shape: Any) -> None:
    """torch's refusal of an in-place product whose result does not have self's shape."""
    if tuple(shape) != tuple(self._data.shape):
        raise RuntimeError(
            f"Bad in-place call: input tensor size {list(self._data.shape)} and output tensor "
            f"size {list(shape)} should match")


def _bad_inplace(self: Tensor, out: Tensor) -> None:
    _check_inplace_shape(self, out._data.shape)


def _multiplier_getters(ctx_beta: int, ctx_alpha: int) -> Any:
    return {"beta": lambda saved, ctx: ctx[ctx_beta], "alpha": lambda saved, ctx: ctx[ctx_alpha]}


# ---- addmv -----------------------------------------------------------------------------------
def _addmv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    beta, alpha = ctx
    mat, vec = saved.mat, saved.vec  # each saved only where the other needs a gradient
    gi = g if beta == 1 else g * beta
    gm = None if vec is None else outer(g, vec)
    gv = None if mat is None else mv(mat.t(), g)
    if alpha != 1:
        gm = None if gm is None else gm * alpha
        gv = None if gv is None else gv * alpha
    return gi, gm, gv


ADDMV = node("AddmvBackward0", _addmv_bw, saved=("mat", "vec"), getters=_multiplier_getters(0, 1))


@op(method="addmv", function="addmv", grad_fn="AddmvBackward0", autocast=dict(cuda="lower"))
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * (mat @ vec).

    Args:
        input (Tensor): the vector added, broadcast to (n,).
        mat (Tensor): a matrix (n, m).
        vec (Tensor): a vector (m,).
        beta (Number, optional): keyword-only; input's multiplier. Default: 1.
        alpha (Number, optional): keyword-only; the product's multiplier. Default: 1.

    Example::

        >>> rustgrad.addmv(rustgrad.tensor([1., 1.]), rustgrad.eye(2), rustgrad.tensor([2., 3.]), alpha=2)
        tensor([5., 7.])
    """
    xd, md, vd = input._data, mat._data, vec._data
    same_device(md, vd)
    same_device(xd, md)
    if md.ndim != 2 or vd.ndim != 1 or xd.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {xd.ndim}, {md.ndim}, {vd.ndim}")
    n, m = md.shape
    if m != vd.shape[0] or (xd.ndim == 1 and xd.shape[0] not in (1, n)):
        got = xd.shape[0] if xd.ndim else 1
        raise RuntimeError(f"size mismatch, got input ({got}), mat ({n}x{m}), vec ({vd.shape[0]})")
    if not (xd.dtype == md.dtype == vd.dtype):
        raise RuntimeError(
            f"addmv input tensors must have the same dtype, but got {_scalar_name(xd)}, "
            f"{_scalar_name(md)}, and {_scalar_name(vd)}")
    _no_bool("addmv_impl_cpu", md)
    xp = mat._backend
    out = _combine(xp, xd, _product(xp, md, vd), beta, alpha, (n,))
    return ADDMV.record(out, (input, mat, vec), (beta, alpha), mat=mat if vec.requires_grad else None,
                        vec=vec if mat.requires_grad else None)


@op(method="addmv_", function="addmv_", grad_fn="AddmvBackward0")
def addmv_(self: Tensor, mat: Tensor, vec: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place addmv: self becomes beta * self + alpha * (mat @ vec).

    Example::

        >>> x = rustgrad.ones(2)
        >>> x.addmv_(rustgrad.eye(2), rustgrad.tensor([2., 3.]))
        tensor([3., 4.])
    """
    def compute(src: Tensor) -> Tensor:
        out = addmv(src, mat, vec, beta=beta, alpha=alpha)
        _bad_inplace(self, out)
        return out

    # torch writes into an expanded self without refusing it (the last write wins)
    return inplace_from(self, compute, False, mat, vec, overlap=False)


# ---- addr ------------------------------------------------------------------------------------
def _addr_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    beta, alpha = ctx
    v1, v2 = saved.vec1, saved.vec2  # each saved only where the other needs a gradient
    gi = g if beta == 1 else g * beta
    g1 = None if v2 is None else mv(g, v2.to(g.dtype))
    g2 = None if v1 is None else mv(g.t(), v1.to(g.dtype))
    if alpha != 1:
        g1 = None if g1 is None else g1 * alpha
        g2 = None if g2 is None else g2 * alpha
    return gi, g1, g2


ADDR = node("AddrBackward0", _addr_bw, saved=("vec1", "vec2"), getters=_multiplier_getters(0, 1))


def _check_addr_scalars(dt: Any, beta: Any, alpha: Any) -> None:
    if dt.kind == "b" or dt.kind in "iu":
        for name, s in (("beta", beta), ("alpha", alpha)):
            if isinstance(s, float):
                raise RuntimeError(
                    f"For integral input tensors, argument {name} must not be a floating point number.")
    if dt.kind != "b" and isinstance(alpha, bool):
        raise RuntimeError("Boolean alpha only supported for Boolean results.")


@op(method="addr", function="addr", grad_fn="AddrBackward0", autocast=dict(cuda="lower"))
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * outer(vec1, vec2), in the operands' promoted dtype.

    Args:
        input (Tensor): the matrix added, broadcast to (n, m).
        vec1 (Tensor): the vector of rows (n,).
        vec2 (Tensor): the vector of columns (m,).
        beta (Number, optional): keyword-only; input's multiplier. Default: 1.
        alpha (Number, optional): keyword-only; the product's multiplier. Default: 1.

    For bool tensors the sum is a logical or and the products logical ands.

    Example::

        >>> rustgrad.addr(rustgrad.zeros(2, 2), rustgrad.tensor([1., 2.]), rustgrad.tensor([3., 4.]))
        tensor([[3., 4.],
                [6., 8.]])
    """
    return _addr(input, vec1, vec2, beta, alpha, None)


def _addr(input: Tensor, vec1: Tensor, vec2: Tensor, beta: Any, alpha: Any, out_dtype: Any) -> Tensor:
    xd, ad, bd = input._data, vec1._data, vec2._data
    same_device(ad, bd)
    same_device(xd, ad)
    for name, d in (("vec1", ad), ("vec2", bd)):
        if d.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {d.ndim}-D")
    shape = (ad.shape[0], bd.shape[0])
    _expanded_shape(tuple(xd.shape), shape)
    dt = _dtype.result_type(input, vec1, vec2).np
    _check_addr_scalars(dt, beta, alpha)
    xp = vec1._backend
    a, b, x = ad.astype(dt, copy=False), bd.astype(dt, copy=False), xd.astype(dt, copy=False)
    res = dt if out_dtype is None else out_dtype
    if dt.kind == "b":
        prod = a[:, None] & b[None, :]
        out = (prod & bool(alpha)) | (x & bool(beta)) if beta else prod & bool(alpha)
        out = xp.ascontiguousarray(xp.broadcast_to(out, shape))
    else:
        with quiet_fp(xp):
            prod = opmath(a)[:, None] * opmath(b)[None, :]
        out = _combine(xp, x, prod.astype(dt, copy=False), beta, alpha, shape)
    out = out.astype(res, copy=False)  # in place: rounded once to self's dtype
    return ADDR.record(out, (input, vec1, vec2), (beta, alpha), vec1=vec1 if vec2.requires_grad else None,
                       vec2=vec2 if vec1.requires_grad else None)


@op(method="addr_", grad_fn="AddrBackward0")
def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place addr: self becomes beta * self + alpha * outer(vec1, vec2) (in self's dtype).

    Example::

        >>> rustgrad.ones(2, 2).addr_(rustgrad.tensor([1., 2.]), rustgrad.tensor([1., 0.]))
        tensor([[2., 1.],
                [3., 1.]])
    """
    if self._data.ndim != 2:
        raise RuntimeError(f"2D tensor expected, got {self._data.ndim}D tensor for input")
    for name, d in (("vec1", vec1._data), ("vec2", vec2._data)):
        if d.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {d.ndim}-D")
    if tuple(self._data.shape) != (vec1._data.shape[0], vec2._data.shape[0]):
        raise RuntimeError(
            f"size mismatch, input: {list(self._data.shape)}, v1: {list(vec1._data.shape)}, "
            f"v2: {list(vec2._data.shape)}")
    check_inplace_cast(self, _dtype.result_type(self, vec1, vec2))
    return inplace_from(self, lambda src: _addr(src, vec1, vec2, beta, alpha, self._data.dtype), False,
                        vec1, vec2)


# ---- addbmm ----------------------------------------------------------------------------------
def _addbmm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    beta, alpha, (nb, n, p) = ctx
    b1, b2 = saved.batch1, saved.batch2  # each saved only where the other needs a gradient
    gi = g if beta == 1 else g * beta
    ge = g.unsqueeze(0).expand(nb, n, p)
    g1 = None if b2 is None else ge.bmm(b2.transpose(1, 2))
    g2 = None if b1 is None else b1.transpose(1, 2).bmm(ge)
    if alpha != 1:
        g1 = None if g1 is None else g1 * alpha
        g2 = None if g2 is None else g2 * alpha
    return gi, g1, g2


ADDBMM = node("AddbmmBackward0", _addbmm_bw, saved=("batch1", "batch2"), getters={
    **_multiplier_getters(0, 1),
    "batch1_sym_argsize_0": lambda saved, ctx: ctx[2][0],
    "batch1_sym_argsize_1": lambda saved, ctx: ctx[2][1],
    "batch2_sym_argsize_2": lambda saved, ctx: ctx[2][2]})


def _dim_size(d: Any, dim: int) -> int:
    if dim >= d.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(d.ndim, 1)}, "
                         f"{max(d.ndim, 1) - 1}], but got {dim})")
    return int(d.shape[dim])


@op(method="addbmm", function="addbmm", grad_fn="AddbmmBackward0", autocast=dict(cuda="lower", cpu="lower"))
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """beta * input + alpha * the sum over the batch of batch1[i] @ batch2[i].

    Args:
        input (Tensor): the matrix added, broadcast to (n, p).
        batch1 (Tensor): matrices (b, n, m).
        batch2 (Tensor): matrices (b, m, p).
        beta (Number, optional): keyword-only; input's multiplier. Default: 1.
        alpha (Number, optional): keyword-only; the products' multiplier. Default: 1.

    Example::

        >>> rustgrad.addbmm(rustgrad.zeros(1, 1), rustgrad.ones(3, 1, 2), rustgrad.ones(3, 2, 1))
        tensor([[6.]])
    """
    xd, ad, bd = input._data, batch1._data, batch2._data
    same_device(ad, bd)
    same_device(xd, ad)
    shape = (_dim_size(ad, 1), _dim_size(bd, 2))
    _expanded_shape(tuple(xd.shape), shape)
    for name, d in (("batch1", ad), ("batch2", bd)):
        if d.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if ad.shape[0] != bd.shape[0]:
        raise RuntimeError(
            f"batch1 and batch2 must have same number of batches, got {ad.shape[0]} and {bd.shape[0]}")
    if ad.shape[2] != bd.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({ad.shape[1]}x{ad.shape[2]} and "
            f"{bd.shape[1]}x{bd.shape[2]})")
    for name, d in (("self", xd), ("mat1", ad)):
        if d.dtype != bd.dtype:
            raise RuntimeError(f"{name} and mat2 must have the same dtype, but got {_scalar_name(d)} "
                               f"and {_scalar_name(bd)}")
    _no_bool("addmm_impl_cpu_", ad)
    xp = batch1._backend
    prod = _product(xp, ad, bd)
    summed = prod.sum(0) if ad.shape[0] else xp.zeros(shape, dtype=ad.dtype)
    out = _combine(xp, xd, summed.astype(ad.dtype, copy=False), beta, alpha, shape)
    dims = (int(ad.shape[0]), shape[0], shape[1])
    return ADDBMM.record(out, (input, batch1, batch2), (beta, alpha, dims),
                         batch1=batch1 if batch2.requires_grad else None,
                         batch2=batch2 if batch1.requires_grad else None)


@op(method="addbmm_", grad_fn="AddbmmBackward0")
def addbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place addbmm: self becomes beta * self + alpha * sum_i batch1[i] @ batch2[i].

    Example::

        >>> rustgrad.ones(1, 1).addbmm_(rustgrad.ones(3, 1, 2), rustgrad.ones(3, 2, 1))
        tensor([[7.]])
    """
    def compute(src: Tensor) -> Tensor:
        out = addbmm(src, batch1, batch2, beta=beta, alpha=alpha)
        _bad_inplace(self, out)
        return out

    return inplace_from(self, compute, False, batch1, batch2)


# ---- the in-place addmm and baddbmm ------------------------------------------------------------
@op(method="addmm_", grad_fn="AddmmBackward0")
def addmm_(self: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place addmm: self becomes beta * self + alpha * (mat1 @ mat2).

    Example::

        >>> rustgrad.ones(2, 2).addmm_(rustgrad.eye(2), rustgrad.eye(2), beta=2)
        tensor([[3., 2.],
                [2., 3.]])
    """
    _check_inplace_shape(self, _addmm_checks(self, mat1, mat2, False))
    return inplace_from(self, lambda src: addmm(src, mat1, mat2, beta=beta, alpha=alpha), False, mat1, mat2)


@op(method="baddbmm_", grad_fn="BaddbmmBackward0")
def baddbmm_(self: Tensor, batch1: Tensor, batch2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """In-place baddbmm: self becomes beta * self + alpha * (batch1 @ batch2), batched.

    Example::

        >>> rustgrad.zeros(1, 1, 1).baddbmm_(rustgrad.ones(1, 1, 2), rustgrad.ones(1, 2, 1))
        tensor([[[2.]]])
    """
    _check_inplace_shape(self, _addmm_checks(self, batch1, batch2, True))
    return inplace_from(self, lambda src: baddbmm(src, batch1, batch2, beta=beta, alpha=alpha), False,
                        batch1, batch2)


# ---- inner, vdot, chain_matmul -----------------------------------------------------------------
@op(method="inner", function="inner", grad_fn=("ViewBackward0", "MulBackward0"))
def inner(input: Tensor, other: Tensor) -> Tensor:
    """The inner product over the last dims: sum_k input[..., k] * other[..., k] for every pair of
    leading indices (a product with a 0-d operand).

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, with input's last size.

    Example::

        >>> rustgrad.inner(rustgrad.tensor([[1., 2.], [3., 4.]]), rustgrad.tensor([1., 1.]))
        tensor([3., 7.])
    """
    xd, od = input._data, other._data
    if xd.ndim == 0 or od.ndim == 0:
        return input * other
    if xd.shape[-1] != od.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(xd.shape)} and {list(od.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def _vdot_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return (None if b is None else g * b), (None if a is None else g * a)


VDOT = node("VdotBackward0", _vdot_bw, saved=("self", "other"))


@op(method="vdot", function="vdot", grad_fn="VdotBackward0", autocast=dict(cuda="promote"))
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """The dot product of two 1-D tensors, the first conjugated (for real tensors: dot).

    Args:
        input (Tensor): the first vector.
        other (Tensor): the second vector, of the same size and dtype.

    Example::

        >>> rustgrad.vdot(rustgrad.tensor([1., 2.]), rustgrad.tensor([3., 4.]))
        tensor(11.)
    """
    ad, bd = input._data, other._data
    _check_dot(ad, bd)
    xp = input._backend
    out = xp.asarray(_product(xp, ad, bd))
    return VDOT.record(out, (input, other), self=input if other.requires_grad else None,
                       other=other if input.requires_grad else None)


_WARNED_CHAIN: List[bool] = []


@op(function="chain_matmul", grad_fn=("CloneBackward0", "ViewBackward0", "MmBackward0"), autocast=dict(cuda="lower"))
def chain_matmul(*matrices: Tensor) -> Tensor:
    """The product of the matrices, in the cheapest order (deprecated in torch: see
    linalg.multi_dot, which this runs).

    Args:
        matrices (Tensors): two or more 2-D tensors, each with as many rows as the last has
            columns (one alone is returned as a copy).

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     rustgrad.chain_matmul(rustgrad.eye(2), rustgrad.tensor([[1.], [2.]]))
        tensor([[1.],
                [2.]])
    """
    if not _WARNED_CHAIN:
        _WARNED_CHAIN.append(True)
        warnings.warn(
            "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
            "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
            "multiple parameters.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for t in matrices:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {matrices.index(t)} in argument 0, but got "
                            f"{type(t).__name__}")
        if t._data.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {t._data.ndim}, expected 2 instead.")
    if len(matrices) == 1:
        return clone(matrices[0])
    return linalg_multi_dot(list(matrices))


# ---- diagflat, vander --------------------------------------------------------------------------
@op(method="diagflat", function="diagflat", grad_fn="DiagEmbedBackward0")
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The square matrix with input's entries (flattened) on its diagonal `offset`.

    Args:
        offset (int, optional): which diagonal: above the main one when positive. Default: 0.

    Example::

        >>> rustgrad.diagflat(rustgrad.tensor([[1, 2]]))
        tensor([[1, 0],
                [0, 2]])
    """
    return diag(input.reshape(-1), offset)


@op(function="vander", grad_fn=("FlipBackward0", "torch::autograd::CopySlices"))
def vander(x: Tensor, N: Optional[int] = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of x: its columns are the powers of x, x**(N-1) first (x**0 first
    with increasing=True).

    Args:
        x (Tensor): a 1-D tensor.
        N (int, optional): the number of columns. Default: len(x).
        increasing (bool, optional): powers increasing left to right. Default: False.

    Integers (and bool) give int64, as the cumulative product torch builds it with.

    Example::

        >>> rustgrad.vander(rustgrad.tensor([1, 2, 3]), 3)
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    d = x._data
    if d.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = int(d.shape[0]) if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = _dtype.promote_types(_dtype.from_np(d.dtype), _dtype.int64)
    xp = x._backend
    result = const(xp.empty((int(d.shape[0]), n), dtype=dt.np))
    if n > 0:
        result.fill_(1)
        if n > 1:
            # torch's own construction: the powers as a running product written through a view
            result[:, 1:].copy_(x.unsqueeze(1))
            result[:, 1:].copy_(cumprod(result[:, 1:], 1))
    return result if increasing else flip(result, 1)


# ---- adjoints, renorm_ -------------------------------------------------------------------------
_WARNED_H: List[bool] = []


def _conj_transpose(input: Tensor) -> Tensor:
    """The last two dims swapped, conjugated when complex (ConjBackward0, as torch's)."""
    out = transpose(input, -2, -1)
    return out.conj() if out._data.dtype.kind == "c" else out


@op(prop="H", grad_fn=("TransposeBackward0", "ConjBackward0"))
def H(input: Tensor) -> Tensor:  # noqa: N802  (torch's property name)
    """The conjugate transpose of a matrix (for real tensors its transpose; a 0-d tensor itself).

    Example::

        >>> rustgrad.tensor([[1, 2]]).H
        tensor([[1],
                [2]])
    """
    n = input._data.ndim
    if n == 0:
        if not _WARNED_H:
            _WARNED_H.append(True)
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning,
                          stacklevel=2)
        return input
    if n != 2:
        extra = " For batches of matrices, consider using tensor.mH" if n > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor.{extra}")
    return _conj_transpose(input)


@op(prop="mH", grad_fn=("TransposeBackward0", "ConjBackward0"))
def mH(input: Tensor) -> Tensor:  # noqa: N802  (torch's property name)
    """The conjugate transpose of each matrix of a batch (for real tensors: mT).

    Example::

        >>> rustgrad.zeros(4, 2, 3).mH.shape
        torch.Size([4, 3, 2])
    """
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(
            f"tensor.mH is only supported on matrices or batches of matrices. Got {n}-D tensor.")
    return _conj_transpose(input)


@op(method="adjoint", function="adjoint", grad_fn=("TransposeBackward0", "ConjBackward0"))
def adjoint(input: Tensor) -> Tensor:
    """The conjugate transpose of each matrix of input, a view (for real tensors: input.mT).

    Example::

        >>> rustgrad.tensor([[1, 2]]).adjoint()
        tensor([[1],
                [2]])
    """
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(
            f"tensor.adjoint() is only supported on matrices or batches of matrices. Got {n}-D tensor.")
    return _conj_transpose(input)


@op(method="renorm_", grad_fn="RenormBackward0")
def renorm_(self: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """In-place renorm: each slice of self along dim whose p-norm exceeds maxnorm is scaled down
    to that norm.

    Example::

        >>> rustgrad.tensor([[3., 4.], [0.3, 0.4]]).renorm_(2, 0, 1.)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    return inplace_from(self, lambda src: renorm(src, p, dim, maxnorm), True)

