"""Sorting and order statistics: sort, argsort, msort, topk, median, nanmedian, kthvalue, mode,
unique, unique_consecutive, searchsorted, bucketize."""

from __future__ import annotations

from typing import Any

from .. import _dtype, return_types
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    _not_implemented_bw,
    record,
)
from ._util import (
    const as _const,
)
from .compare import where
from .gather import scatter_add_into_zeros
from .reduce import _evenly_bw, _scan, _src

_INT64 = _dtype.int64.np
_median_type = return_types.median


# ---- median ----------------------------------------------------------------------------------
def _median_all_bw(g: Tensor, saved: Any, mask: Any) -> Any:
    # a selection, not a product: a NaN upstream reaches only the chosen entries, as torch's
    return where(_const(mask), g / float(mask.sum()), 0.0)


MEDIAN = node("MedianBackward0", _median_all_bw)


def _median_dim_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx, keepdim = ctx
    if not keepdim and len(shape):
        g = g.unsqueeze(dim)
    return scatter_add_into_zeros(g, shape, dim, idx)


MEDIAN_DIM = node("MedianBackward1", _median_dim_bw)


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
        return MEDIAN.record(xp.asarray(val, dtype=d.dtype).reshape(()), (input,), mask)
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
    values = MEDIAN_DIM.record(vals_o, (input,),
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


SORT = node("SortBackward0", _select_bw)
SORT_STABLE = node("SortBackward1", _select_bw)  # torch's name when `stable` is given
TOPK = node("TopkBackward0", _select_bw)


@op(method="sort", function="sort", grad_fn=("SortBackward0", "SortBackward1"))
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: Any = None) -> Any:
    """Always a stable sort; torch names the node SortBackward1 when `stable` is given."""
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    idx = _order(xp, src, dim, descending)
    vals = xp.take_along_axis(src, idx, axis=dim).reshape(d.shape)
    v = (SORT if stable is None else SORT_STABLE).record(vals, (input,), (d.shape, dim, idx))
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
    v = TOPK.record(vals, (input,), (shape, dim, idx))
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


# ---- kthvalue, mode, nanmedian, msort ---------------------------------------------------------
def _pick_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's value_selecting_reduction_backward: each value's gradient goes to its index
    shape, dim, idx, keepdim = ctx
    if not shape:
        return g.reshape(())
    if not keepdim:
        g = g.unsqueeze(dim)
    return scatter_add_into_zeros(g, shape, dim, idx)


_SAVED_PICK = {"dim": lambda s, c: c[1], "keepdim": lambda s, c: c[3],
               "self_sym_sizes": lambda s, c: tuple(c[0])}
KTHVALUE = node("KthvalueBackward0", _pick_bw, saved=("indices",), getters=_SAVED_PICK)
MODE = node("ModeBackward0", _pick_bw, saved=("indices",), getters=_SAVED_PICK)
NANMEDIAN = node("NanmedianBackward0", _evenly_bw, saved=("self",), result=True)
NANMEDIAN_DIM = node("NanmedianBackward1", _pick_bw, saved=("indices",), getters=_SAVED_PICK)


def _picked(spec: Any, kind: type, input: Tensor, dim: int, idx: Any, keepdim: bool) -> Any:
    """The (values, indices) named tuple of the entries of input at idx along dim (idx in the
    keepdim shape of the working array), recorded as `spec`."""
    d = input._data
    xp = input._backend
    src = _src(d)
    vals = xp.take_along_axis(src, idx, axis=dim)
    if not d.ndim:
        out_v, out_i = vals.reshape(()), idx.reshape(())
    elif keepdim:
        out_v, out_i = vals, idx
    else:
        out_v, out_i = xp.squeeze(vals, axis=dim), xp.squeeze(idx, axis=dim)
    indices = _const(out_i.astype(_INT64, copy=False))
    values = spec.record(out_v, (input,), (d.shape, dim, idx, keepdim or not d.ndim),
                         indices=indices)
    return kind(values, indices)


def _check_reduced(name: str, src: Any, dim: int) -> None:
    """torch's refusal to reduce an empty dim into a non-empty result."""
    rest = 1
    for i, size in enumerate(src.shape):
        rest *= 1 if i == dim else size
    if src.shape[dim] == 0 and rest:
        raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")


@op(method="kthvalue", function="kthvalue", grad_fn="KthvalueBackward0")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The k-th smallest entry along dim (k counts from 1) and its index.

    Args:
        k (int): which smallest entry, 1 for the smallest.
        dim (int, optional): the dim to look along. Default: -1.
        keepdim (bool, optional): keep the reduced dim as size 1. Default: False.

    Returns a named tuple (values, indices); NaN counts as the largest value. Among equal
    entries the index may differ from torch's. The gradient goes to the entry at the index.

    Example::

        >>> rustgrad.tensor([[3., 1., 2.], [6., 4., 5.]]).kthvalue(2, dim=1)
        torch.return_types.kthvalue(
        values=tensor([2., 5.]),
        indices=tensor([2, 2]))
    """
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    n = src.shape[dim]
    _check_reduced("kthvalue", src, dim)
    if src.size and not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if src.size == 0:
        idx = xp.zeros(_keep(src.shape, dim), dtype=_INT64)
    else:
        idx = xp.take(_order(xp, src, dim, False), [k - 1], axis=dim)
    return _picked(KTHVALUE, return_types.kthvalue, input, dim, idx, keepdim)


@op(method="mode", function="mode", grad_fn="ModeBackward0")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along dim (the smallest among equally frequent ones) and the
    index of its last occurrence.

    Args:
        dim (int, optional): the dim to look along. Default: -1.
        keepdim (bool, optional): keep the reduced dim as size 1. Default: False.

    Returns a named tuple (values, indices); the gradient goes to the entry at the index.

    Example::

        >>> rustgrad.tensor([[1, 2, 2, 1], [3, 3, 1, 3]]).mode(dim=1)
        torch.return_types.mode(
        values=tensor([1, 3]),
        indices=tensor([3, 3]))
    """
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    n = src.shape[dim]
    _check_reduced("mode", src, dim)
    if src.size == 0:
        return _picked(MODE, return_types.mode, input, dim,
                       xp.zeros(_keep(src.shape, dim), dtype=_INT64),
                       keepdim)
    order = _order(xp, src, dim, False)  # stable: a run's last entry has the largest index
    s = xp.take_along_axis(src, order, axis=dim)
    lead = (slice(None),) * dim
    rest = lead + (slice(1, None),)
    before = lead + (slice(0, n - 1),)
    new = xp.ones(s.shape, dtype=bool)  # where a run of equal values starts (NaNs as one run)
    same = s[rest] == s[before]
    if _dtype.is_floating_np(s.dtype):
        same = same | ((s[rest] != s[rest]) & (s[before] != s[before]))
    new[rest] = ~same
    last = xp.ones(s.shape, dtype=bool)  # where a run ends
    last[before] = ~same
    pos_shape = tuple(-1 if i == dim else 1 for i in range(s.ndim))
    pos = xp.arange(n, dtype=_INT64).reshape(pos_shape)
    start = xp.broadcast_to(xp.where(new, pos, 0), s.shape).copy()
    end = xp.broadcast_to(xp.where(last, pos, n), s.shape).copy()
    start = _running(xp, start, dim, xp.maximum, False)
    end = _running(xp, end, dim, xp.minimum, True)
    count = end - start + 1
    best = xp.argmax(count, axis=dim, keepdims=True)  # the first = the smallest value among ties
    best_end = xp.take_along_axis(end, best, axis=dim)
    idx = xp.take_along_axis(order, best_end, axis=dim)
    return _picked(MODE, return_types.mode, input, dim, idx, keepdim)


def _running(xp: Any, a: Any, axis: int, fn: Any, reverse: bool) -> Any:
    """The inclusive scan of `a` along axis under fn (from the right when reverse)."""
    if reverse:
        return xp.flip(_scan(xp, xp.flip(a, axis=axis), axis, fn), axis=axis)
    return _scan(xp, a, axis, fn)


@op(method="nanmedian", function="nanmedian", grad_fn=("NanmedianBackward0", "NanmedianBackward1"))
def nanmedian(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """median ignoring NaN: the lower median of the non-NaN entries, overall or along dim.

    Args:
        dim (int, optional): the dim to reduce, giving a named tuple (values, indices); all
            entries when None.
        keepdim (bool, optional): keep the reduced dim as size 1. Default: False.

    A row of NaNs only gives NaN. Over all entries the gradient is shared evenly among the
    entries equal to the median; along dim it goes to the entry at the index.

    Example::

        >>> x = rustgrad.tensor([[1., float("nan"), 3., 2.], [4., 5., 6., 7.]])
        >>> x.nanmedian()
        tensor(4.)
        >>> x.nanmedian(dim=1)
        torch.return_types.nanmedian(
        values=tensor([2., 5.]),
        indices=tensor([3, 1]))
    """
    d = input._data
    xp = input._backend
    floating = _dtype.is_floating_np(d.dtype)
    if dim is None:
        flat = d.reshape(-1)
        if floating:
            flat = flat[~xp.isnan(flat)]
        if flat.size == 0:
            val = xp.asarray(xp.nan if floating else 0, dtype=d.dtype)
        else:
            val = xp.sort(flat)[(flat.size - 1) // 2]
        return NANMEDIAN.record(xp.asarray(val, dtype=d.dtype).reshape(()), (input,), self=input)
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    n = src.shape[dim]
    _check_reduced("median", src, dim)
    if src.size == 0:
        return _picked(NANMEDIAN_DIM, return_types.nanmedian, input, dim,
                       xp.zeros(_keep(src.shape, dim), dtype=_INT64), keepdim)
    order = _order(xp, src, dim, False)  # NaNs sort last
    count = (~xp.isnan(src)).sum(axis=dim, keepdims=True) if floating else \
        xp.full(_keep(src.shape, dim), n)
    k = xp.where(count > 0, (count - 1) // 2, 0).astype(_INT64)
    idx = xp.take_along_axis(order, k, axis=dim)
    return _picked(NANMEDIAN_DIM, return_types.nanmedian, input, dim, idx, keepdim)


def _keep(shape: tuple, dim: int) -> tuple:
    return tuple(1 if i == dim else s for i, s in enumerate(shape))


@op(method="msort", function="msort", grad_fn="SortBackward0")
def msort(input: Tensor) -> Tensor:
    """input sorted along its first dim (sort(input, dim=0).values).

    Example::

        >>> rustgrad.tensor([[3, 1], [2, 4]]).msort()
        tensor([[2, 1],
                [3, 4]])
    """
    return sort(input, 0).values


# ---- unique_consecutive ----------------------------------------------------------------------
UNIQUE_CONSECUTIVE = node("UniqueConsecutiveBackward0", _not_implemented_bw)


@op(method="unique_consecutive", function="unique_consecutive",
    grad_fn="UniqueConsecutiveBackward0")
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: Any = None) -> Any:
    """input with each run of equal consecutive entries (or slices along dim) kept once.

    Args:
        input (Tensor): the input tensor (flattened when dim is None).
        return_inverse (bool, optional): also return, for each entry, the index of its run.
        return_counts (bool, optional): also return each run's length.
        dim (int, optional): compare whole slices along dim instead of single entries.

    Returns the values, followed by the inverse indices and the counts when asked for.

    Example::

        >>> rustgrad.tensor([1, 1, 2, 2, 3, 1, 1]).unique_consecutive(return_counts=True)
        (tensor([1, 2, 3, 1]), tensor([2, 2, 1, 2]))
    """
    d = input._data
    xp = input._backend
    if dim is None:
        src, axis = d.reshape(-1), 0
    else:
        axis = _wrap_dim(dim, max(d.ndim, 1))
        src = d.reshape(1) if d.ndim == 0 else d
    n = src.shape[axis]
    lead = (slice(None),) * axis
    keep = xp.ones(n, dtype=bool)
    if n > 1:
        diff = src[lead + (slice(1, None),)] != src[lead + (slice(0, n - 1),)]
        other = tuple(i for i in range(src.ndim) if i != axis)
        keep[1:] = diff.any(axis=other) if other else diff
    starts = xp.nonzero(keep)[0]
    vals = xp.take(src, starts, axis=axis)
    if input.requires_grad and _dtype.is_floating_np(d.dtype):
        out = UNIQUE_CONSECUTIVE.record(vals, (input,), "unique_consecutive")
    else:
        out = _const(vals)
    outs = [out]
    if return_inverse:
        inv = xp.cumsum(keep.astype(_INT64)) - 1
        outs.append(_const(inv.reshape(d.shape) if dim is None else inv))
    if return_counts:
        bounds = xp.concatenate([starts, xp.asarray([n], dtype=starts.dtype)])
        outs.append(_const((bounds[1:] - bounds[:-1]).astype(_INT64)))
    return outs[0] if len(outs) == 1 else tuple(outs)
