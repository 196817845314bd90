"""Sorting and order statistics: sort, argsort, topk, median, unique."""

from __future__ import annotations

from typing import Any

from .. import _dtype, return_types
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._util import (
    const as _const,
)
from ._util import (
    record,
)
from .compare import where
from .gather import scatter_add_into_zeros
from .reduce import _src

_INT64 = _dtype.int64.np
_median_type = return_types._make("median")


# ---- median ----------------------------------------------------------------------------------
def _median_all_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, dt = ctx

    # a selection, not a product: a NaN upstream reaches only the chosen entries, as torch's
    return where(_const(mask), g / float(mask.sum()), 0.0)


def _median_dim_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx, keepdim = ctx
    if not keepdim and len(shape):
        g = g.unsqueeze(dim)
    return scatter_add_into_zeros(g, shape, dim, idx)


@op(method="median", function="median", grad_fn=("MedianBackward0", "MedianBackward1"))
def median(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The lower median of all entries, or (values, indices) over dim."""
    d = input._data
    xp = input._backend
    if dim is None:
        if d.size == 0:
            return record(xp.asarray(xp.nan, dtype=d.dtype), (), "", None)
        flat = xp.sort(d.reshape(-1))
        val = flat[(d.size - 1) // 2]
        mask = d == val
        if _dtype.is_floating_np(d.dtype) and bool(xp.isnan(d).any()):
            val = xp.asarray(xp.nan, dtype=d.dtype)
            mask = xp.isnan(d)
        return record(xp.asarray(val, dtype=d.dtype).reshape(()), (input,), "MedianBackward0",
                      _median_all_bw, None, (mask, d.dtype))
    nd = d.ndim
    dim = _wrap_dim(dim, max(nd, 1))
    src = d.reshape(1) if nd == 0 else d
    n = src.shape[dim]
    if n == 0:
        raise IndexError(
            f"median(): Expected reduction dim {dim} to have non-zero size.")
    order = xp.argsort(src, axis=dim, kind="stable")
    k = (n - 1) // 2
    idx = xp.take(order, [k], axis=dim)
    if _dtype.is_floating_np(src.dtype):  # a NaN in a row is that row's median (its first one), as torch's
        nans = xp.isnan(src)
        idx = xp.where(nans.any(axis=dim, keepdims=True),
                       xp.argmax(nans, axis=dim, keepdims=True), idx)
    vals = xp.take_along_axis(src, idx, axis=dim)
    if not keepdim or nd == 0:
        vals_o = vals.reshape(d.shape) if nd == 0 else xp.squeeze(vals, axis=dim)
        idx_o = idx.reshape(d.shape) if nd == 0 else xp.squeeze(idx, axis=dim)
    else:
        vals_o, idx_o = vals, idx
    values = record(vals_o, (input,), "MedianBackward1", _median_dim_bw, None,
                    (d.shape, dim, idx.reshape(d.shape) if nd == 0 else idx, keepdim or nd == 0))
    indices = _const(idx_o.astype(_INT64))
    return _median_type(values, indices)


# ---- unique ----------------------------------------------------------------------------------
@op(method="unique", function="unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002
           return_counts: bool = False, dim: Any = None) -> Any:
    """The sorted distinct values, optionally with the inverse indices and the counts."""
    d = input._data
    xp = input._backend
    if dim is not None:
        return _unique_dim(input, _wrap_dim(dim, max(d.ndim, 1)), return_inverse, return_counts)
    res = xp.unique(d.reshape(-1), return_inverse=True, return_counts=True)
    vals, inv, counts = res
    outs = [_const(vals)]
    if return_inverse:
        outs.append(_const(inv.reshape(d.shape).astype(_INT64)))
    if return_counts:
        outs.append(_const(counts.astype(_INT64)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _unique_dim(input: Tensor, dim: int, return_inverse: bool, return_counts: bool) -> Any:
    """The distinct slices along dim, sorted lexicographically (NaNs never equal, as torch)."""
    d = input._data
    xp = input._backend
    vals, inv, counts = xp.unique(d, return_inverse=True, return_counts=True, axis=dim,
                                  equal_nan=False)
    outs = [_const(xp.ascontiguousarray(vals))]
    if return_inverse:
        outs.append(_const(inv.reshape(-1).astype(_INT64)))
    if return_counts:
        outs.append(_const(counts.astype(_INT64)))
    return outs[0] if len(outs) == 1 else tuple(outs)


# ---- sort, argsort, topk ---------------------------------------------------------------
sort_result = return_types.sort
topk_result = return_types.topk


def _order(xp: Any, src: Any, dim: int, descending: bool) -> Any:
    """Stable sorting indices along dim; NaN sorts as the largest value (as torch)."""
    if src.dtype.kind == "b":
        src = src.astype(xp.int8)
    if not descending:
        return xp.argsort(src, axis=dim, kind="stable")
    # descending and stable: sort the reversed array ascending, reverse, map the indices back
    n = src.shape[dim]
    rev = xp.flip(src, axis=dim)
    idx = xp.flip(xp.argsort(rev, axis=dim, kind="stable"), axis=dim)
    return (n - 1) - idx


def _select_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's value_selecting_reduction_backward: each value's gradient goes to its index
    shape, dim, idx = ctx
    if not shape:
        return g.reshape(())
    return scatter_add_into_zeros(g, shape, dim, idx)


@op(method="sort", function="sort", grad_fn=("SortBackward0", "SortBackward1"))
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: Any = None) -> Any:
    """Always a stable sort; torch names the node SortBackward1 when `stable` is given."""
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    idx = _order(xp, src, dim, descending)
    vals = xp.take_along_axis(src, idx, axis=dim).reshape(d.shape)
    name = "SortBackward0" if stable is None else "SortBackward1"
    v = record(vals, (input,), name, _select_bw, None, (d.shape, dim, idx))
    i = _const(idx.reshape(d.shape).astype(_dtype.int64.np, copy=False))
    return sort_result(v, i)


@op(method="argsort", function="argsort")
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The indices that sort input along dim."""
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    idx = _order(input._backend, _src(d), dim, descending)
    return _const(idx.reshape(d.shape).astype(_dtype.int64.np, copy=False))


@op(method="topk", function="topk", grad_fn="TopkBackward0")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The k largest (or smallest) entries along dim and their indices."""
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    n = src.shape[dim]
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    if d.dtype.kind == "b":
        raise NotImplementedError("topk does not support bool dtypes on CPU")
    idx = _order(xp, src, dim, largest)
    lead = (slice(None),) * dim
    idx = idx[lead + (slice(0, k),)]
    vals = xp.take_along_axis(src, idx, axis=dim)
    shape = d.shape
    if not shape:
        vals, out_idx = vals.reshape(()), idx.reshape(())
    else:
        out_idx = idx
    v = record(vals, (input,), "TopkBackward0", _select_bw, None, (shape, dim, idx))
    i = _const(out_idx.astype(_dtype.int64.np, copy=False))
    return topk_result(v, i)


# ---- searchsorted, bucketize -----------------------------------------------------------------
def _search(seq: Any, values: Any, right: bool, sorter: Any, xp: Any) -> Any:
    """Insertion points of `values` rows into the matching rows of `seq` (1-d seq: one row)."""
    side = "right" if right else "left"
    if seq.ndim == 1:
        return xp.searchsorted(seq, values, side=side, sorter=sorter)
    rows_s = seq.reshape(-1, seq.shape[-1])
    rows_v = values.reshape(-1, values.shape[-1])
    rows_o = None if sorter is None else sorter.reshape(-1, sorter.shape[-1])
    out = xp.zeros(rows_v.shape, dtype=_INT64)
    for r in range(rows_s.shape[0]):
        out[r] = xp.searchsorted(rows_s[r], rows_v[r], side=side,
                                 sorter=None if rows_o is None else rows_o[r])
    return out.reshape(values.shape)


@op(function="searchsorted")
def searchsorted(sorted_sequence: Tensor, input: Any, *, out_int32: bool = False,
                 right: bool = False, side: Any = None, sorter: Any = None) -> Tensor:
    """Indices at which input's values would be inserted into sorted_sequence's last dim."""
    name = "torch.searchsorted()"
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{name}: side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError(f"{name}: side and right can't be set to opposites, got side of "
                               "left while right was True")
        right = side == "right"
    seq = sorted_sequence._data
    xp = sorted_sequence._backend
    scalar = not isinstance(input, Tensor)
    values = xp.asarray(input) if scalar else input._data
    if seq.ndim > 1 and (scalar or seq.shape[:-1] != values.shape[:-1] or values.ndim != seq.ndim):
        raise RuntimeError(
            f"{name}: boundaries tensor should be 1 dimension or the first N-1 dimensions of "
            "boundaries tensor and input value tensor must match, but we got boundaries tensor "
            f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    order = None if sorter is None else sorter._data
    out = _search(seq, values, right, order, xp)
    dt = _dtype.int32.np if out_int32 else _INT64
    return _const(xp.asarray(out).astype(dt))


@op(function="bucketize")
def bucketize(input: Any, boundaries: Tensor, *, out_int32: bool = False,
              right: bool = False) -> Tensor:
    """The bucket of each value of input among 1-d sorted boundaries."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
