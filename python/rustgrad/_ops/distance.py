"""Distances: cdist (the p-norm distance between each row of x1 and each row of x2), pdist
(between the rows of one input), pairwise_distance and cosine_similarity.

The forward computes on the device's arrays from the broadcast differences; the backward is
written in rustgrad ops over the same differences (so double backward works), with torch's
conventions at ties and zero distances: a zero distance passes no gradient, and for p = inf
every coordinate attaining the max gets it."""

from __future__ import annotations

import math
from typing import Any, Optional

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import quiet_fp
from .indexing import index_into_zeros


def _p_norm_last(xp: Any, diff: Any, p: float, dtype: Any) -> Any:
    """The p-norm over the last dim of |differences| (p = 0 counts the nonzero ones, inf takes
    the largest; nothing to take the largest of gives 0)."""
    with quiet_fp(xp):
        if p == 0:
            return (diff != 0).sum(-1).astype(dtype)
        if p == 1:
            return diff.sum(-1)
        if p == 2:
            return xp.sqrt((diff * diff).sum(-1))
        if p == math.inf:
            return diff.max(-1) if diff.size else diff.sum(-1)
        return (diff ** p).sum(-1) ** (1.0 / p)


def _cdist_bw(g: Tensor, saved: Any, p: float) -> Any:
    x1, x2, out = saved.x1, saved.x2, saved.result
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    gg = g.unsqueeze(-1)
    d = out.unsqueeze(-1)
    if p == 0:
        term = diff * 0.0
    elif p == 1:
        term = gg * diff.sign()
    elif p == math.inf:
        term = gg * diff.sign() * (diff.abs() == d).to(diff.dtype)
    else:
        # sign(diff) |diff|^(p-1) / d^(p-1); a zero distance passes nothing
        ratio = diff / d if p == 2 else \
            diff.sign() * (diff.abs() / d).pow(p - 1)
        term = gg * ratio.masked_fill(d == 0, 0.0)
    # at the broadcast batch shape: the engine sums each to its input's batch shape
    g1 = term.sum(-2) if x1.requires_grad else None
    g2 = -term.sum(-3) if x2.requires_grad else None
    return g1, g2


CDIST = node("CdistBackward0", _cdist_bw, saved=("x1", "x2"), result=True,
             getters={"p": lambda s, c: c})


@op(function="cdist", grad_fn="CdistBackward0", autocast=dict(cuda="fp32", cpu="fp32"))
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: Optional[str] = None) -> Tensor:
    """The p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M)."""
    a, b = x1._data, x2._data
    if a.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {a.ndim}D")
    if b.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {b.ndim}D")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_dtype.scalar_type_name(t.dtype)}")
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{a.shape[-1]} X2: {b.shape[-1]}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype.scalar_type_name(x1.dtype)} but found "
                           f"{_dtype.scalar_type_name(x2.dtype)}")
    if a.dtype.name == "float16":
        raise NotImplementedError("\"cdist\" not implemented for 'Half'")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    xp = x1._backend
    p = float(p)
    diff = xp.abs(a[..., :, None, :] - b[..., None, :, :])
    out = _p_norm_last(xp, diff, p, a.dtype)
    return CDIST.record(xp.ascontiguousarray(out), (x1, x2), p, x1=x1, x2=x2)


# ---- pdist -------------------------------------------------------------------------------------
def _pdist_pairs(xp: Any, n: int) -> Any:
    """The row pairs (i, j), i < j, in pdist's order (row-major over the upper triangle)."""
    i, j = xp.triu_indices(n, 1)
    return i, j


def _pdist_bw(g: Tensor, saved: Any, p: float) -> Any:
    x, out = saved.self, saved.result
    n, m = x._data.shape
    i, j = _pdist_pairs(x._backend, n)
    if i.size == 0 or p == 0:
        return x * 0.0
    diff = x[(i,)] - x[(j,)]  # (pairs, M)
    gg = g.unsqueeze(-1)
    d = out.unsqueeze(-1)
    if p == 1:
        term = gg * diff.sign()
    elif p == math.inf:
        term = gg * diff.sign() * (diff.abs() == d).to(diff.dtype)
    else:
        # sign(diff) |diff|^(p-1) / d^(p-1); a zero distance passes nothing
        ratio = diff / d if p == 2 else diff.sign() * (diff.abs() / d).pow(p - 1)
        term = gg * ratio.masked_fill(d == 0, 0.0)
    shape = (n, m)
    return index_into_zeros(term, shape, (i,), True) - index_into_zeros(term, shape, (j,), True)


PDIST = node("PdistBackward0", _pdist_bw, saved=("self",), result=True,
             getters={"p": lambda s, c: c})


@op(function="pdist", functional="pdist", grad_fn="PdistBackward0",
    autocast=dict(cuda="fp32"))
def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The p-norm distance between each pair of rows of input (N, M): the upper triangle of
    cdist(input, input), row by row, N * (N - 1) / 2 values.

    Args:
        input (Tensor): (N, M), floating point.
        p (float, optional): the norm's order, at least 0. Default: 2.

    Example::

        >>> rustgrad.pdist(rustgrad.tensor([[0., 0.], [3., 4.], [0., 1.]]))
        tensor([5.0000, 1.0000, 4.2426])
    """
    a = input._data
    if a.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {a.ndim}D")
    if not input.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if not p >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    xp = input._backend
    p = float(p)
    i, j = _pdist_pairs(xp, a.shape[0])
    diff = xp.abs(a[i] - a[j])
    out = _p_norm_last(xp, diff, p, a.dtype)
    return PDIST.record(xp.ascontiguousarray(out.astype(a.dtype, copy=False)), (input,), p,
                        self=input)


# ---- pairwise_distance, cosine_similarity (composites, as torch's) ---------------------------
@op(function="pairwise_distance", functional="pairwise_distance")
def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dim.

    Args:
        x1 (Tensor): (N, D) or (D,).
        x2 (Tensor): broadcastable to x1.
        p (float, optional): the norm's order. Default: 2.
        eps (float, optional): added to the difference, avoiding a zero norm. Default: 1e-6.
        keepdim (bool, optional): keep the last dim with size 1. Default: False.

    Example::

        >>> rustgrad.pairwise_distance(rustgrad.tensor([[0., 0.]]), rustgrad.tensor([[3., 4.]]),
        ...                            eps=0.)
        tensor([5.])
    """
    # Tensor.norm: every p as torch's (0, inf, negative), a zero gradient at a zero norm
    return (x1 - x2 + eps).norm(p, -1, keepdim=keepdim)


@op(function="cosine_similarity", functional="cosine_similarity", autocast=dict(cuda="fp32"))
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along dim.

    Each input is divided by its 2-norm (clamped to at least eps) before their product is
    summed. The inputs broadcast against each other.

    Args:
        x1 (Tensor): the first input.
        x2 (Tensor): the second input.
        dim (int, optional): the dim of the vectors. Default: 1.
        eps (float, optional): the smallest norm divided by. Default: 1e-8.

    Example::

        >>> rustgrad.cosine_similarity(rustgrad.tensor([[1., 0.]]), rustgrad.tensor([[1., 1.]]))
        tensor([0.7071])
    """
    # torch's formula: normalize each, then sum the product (SumBackward1); Tensor.norm passes
    # a zero gradient at a zero vector (sqrt's would be inf * 0)
    n1 = x1.norm(2, dim, keepdim=True).clamp(min=eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp(min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)
