"""matmul and `@`: 1-D, 2-D and batched, with torch's grad_fn names."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._tensor import Tensor
from ._declare import op
from ._util import cast_grad, promote, record, sum_to


def _mm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    ga = None if b is None else g @ b.transpose(-1, -2)
    gb = None if a is None else a.transpose(-1, -2) @ g
    return ga, gb


def _batched_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    ash, bsh, adt, bdt = ctx
    a2 = a.unsqueeze(0) if len(ash) == 1 else a
    b2 = b.unsqueeze(-1) if len(bsh) == 1 else b
    g2 = g
    if len(ash) == 1:
        g2 = g2.unsqueeze(-2)
    if len(bsh) == 1:
        g2 = g2.unsqueeze(-1)
    ga = gb = None
    if a.requires_grad:
        ga = g2 @ b2.transpose(-1, -2)
        if len(ash) == 1:
            ga = ga.squeeze(-2)
        ga = cast_grad(sum_to(ga, ash), adt)
    if b.requires_grad:
        gb = a2.transpose(-1, -2) @ g2
        if len(bsh) == 1:
            gb = gb.squeeze(-1)
        gb = cast_grad(sum_to(gb, bsh), bdt)
    return ga, gb


def _dot_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    return (None if b is None else g * b), (None if a is None else g * a)


def _mv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    ga = None if b is None else g.unsqueeze(1) * b.unsqueeze(0)
    gb = None if a is None else a.t() @ g
    return ga, gb


@op(
    method="matmul",
    dunder="__matmul__",
    function="matmul",
    grad_fn=("DotBackward0", "MmBackward0", "MvBackward0"),
)
def matmul(a: Tensor, b: Any) -> Any:
    if not isinstance(b, Tensor):
        return NotImplemented
    ad, bd = promote(a, b)
    na, nb = ad.ndim, bd.ndim
    if na == 0 or nb == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {na}D and {nb}D"
        )
    ka = ad.shape[-1]
    kb = bd.shape[0] if nb == 1 else bd.shape[-2]
    if ka != kb:
        if na == 1 and nb == 1:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{ka}] and src [{kb}] to have the same "
                f"number of elements, but got {ka} and {kb} elements respectively"
            )
        rows = int(np.prod(ad.shape[:-1]))
        if nb == 1:  # torch folds to mv
            raise RuntimeError(
                f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})"
            )
        if nb == 2:  # torch folds to mm
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and {kb}x{bd.shape[-1]})"
            )
        batch = int(np.prod(np.broadcast_shapes(ad.shape[:-2], bd.shape[:-2])))
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{batch}, {ka}] but got: [{batch}, {kb}]."
        )
    out = a._backend.matmul(ad, bd)
    saved = (a if b.requires_grad else None, b if a.requires_grad else None)
    if na == 2 and nb == 2:
        return record(out, (a, b), "MmBackward0", _mm_bw, saved)
    if na == 1 and nb == 1:
        return record(out, (a, b), "DotBackward0", _dot_bw, saved)
    if na == 2 and nb == 1:
        return record(out, (a, b), "MvBackward0", _mv_bw, saved)
    ctx = (ad.shape, bd.shape, a._data.dtype, b._data.dtype)
    out_t = record(out, (a, b), _batched_name(a, b), _batched_bw, (a, b), ctx)
    if na == 1 and nb == 2:
        out_t._bump_version()  # torch: mm(a.unsqueeze(0), b).squeeze_(0)
    return out_t


def _batched_name(a: Tensor, b: Tensor) -> str:
    """The grad_fn name torch's _matmul_impl ends on for 1-D @ 2-D and batched operands."""
    ash, bsh = a._data.shape, b._data.shape
    na, nb = len(ash), len(bsh)
    if na == 1 and nb == 2:
        return "SqueezeBackward4"  # mm(a.unsqueeze(0), b).squeeze_(0)
    if na == 3 and nb == 3 and ash[0] != bsh[0] and ash[0] == 1 and a.requires_grad:
        na, ash = 2, ash[1:]  # torch squeezes a broadcast batch of 1 that requires grad
    if na == 2 and nb >= 3 and a.requires_grad:
        # folded as (b.mT @ a.t()).mT().contiguous(): a copy unless already contiguous
        n, p = ash[0], bsh[-1]
        numel = n * p
        for s in bsh[:-2]:
            numel *= s
        return "TransposeBackward0" if n == 1 or p == 1 or numel == 0 else "CloneBackward0"
    return "UnsafeViewBackward0"


@op(dunder="__rmatmul__")
def rmatmul(a: Tensor, b: Any) -> Any:
    if not isinstance(b, Tensor):
        return NotImplemented
    return matmul(b, a)
