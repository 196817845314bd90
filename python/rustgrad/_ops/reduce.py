"""Reductions: sum, mean, max/min (whole tensor, and with dim returning (values, indices))."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from .. import _dtype, return_types
from .._tensor import Tensor, _wrap_dim
from ._declare import op
from ._util import _type_name, record

Dims = Union[int, Sequence[int], None]
_F16 = _dtype.float16.np
_F32 = _dtype.float32.np


def _dims(dim: Dims, ndim: int) -> Optional[tuple]:
    if dim is None:
        return None
    if isinstance(dim, int):
        return (_wrap_dim(dim, ndim),)
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return dims or None


def _expand_back(g: Tensor, shape: tuple, dims: Optional[tuple], keepdim: bool) -> Tensor:
    """The gradient of a reduction, broadcast back to the input's shape."""
    if not shape:
        return g.reshape(())
    if dims is None:
        return g.reshape((1,) * len(shape)).expand(shape)
    if not keepdim:
        for d in sorted(dims):
            g = g.unsqueeze(d)
    return g.expand(shape)


def _sum_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dims, keepdim = ctx
    return _expand_back(g, shape, dims, keepdim)


@op(method="sum", function="sum", grad_fn=("SumBackward0", "SumBackward1"))
def sum(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum of all entries, or over dim (keepdim keeps reduced dims as size 1)."""
    d = input._data
    dims = _dims(dim, d.ndim)
    np_dtype = _dtype.to_np(dtype)
    if np_dtype is None and d.dtype.kind in "bu" or (d.dtype.kind == "i" and np_dtype is None):
        np_dtype = _dtype.int64.np
    if np_dtype is None and d.dtype == _F16:
        # torch accumulates half in float32 and rounds once; NumPy would round every step
        out = d.sum(axis=dims if d.ndim else None, keepdims=keepdim, dtype=_F32).astype(_F16)
    else:
        out = d.sum(axis=dims if d.ndim else None, keepdims=keepdim, dtype=np_dtype)
    if (dims is None or not d.ndim) and not keepdim:
        out = input._backend.asarray(out)
    name = "SumBackward0" if dim is None else "SumBackward1"
    return record(out, (input,), name, _sum_bw, None, (d.shape, dims, keepdim))


def _mean_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dims, keepdim, n = ctx
    return _expand_back(g, shape, dims, keepdim) / n


@op(method="mean", function="mean", grad_fn=("MeanBackward0", "MeanBackward1"))
def mean(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of all entries, or over dim."""
    d = input._data
    if d.dtype.kind not in "fc" and dtype is None:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_name(_dtype.from_np(d.dtype))}"
        )
    dims = _dims(dim, d.ndim)
    if dtype is not None:
        d = d.astype(_dtype.to_np(dtype))
    axis = dims if d.ndim else None
    acc = _F32 if d.dtype == _F16 else None
    if d.size == 0:  # torch gives nan silently; NumPy warns "Mean of empty slice"
        import warnings

        with warnings.catch_warnings(), input._backend.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            out = d.mean(axis=axis, keepdims=keepdim, dtype=acc)
    else:
        out = d.mean(axis=axis, keepdims=keepdim, dtype=acc)
    if (dims is None or not d.ndim) and not keepdim:
        out = input._backend.asarray(out, dtype=d.dtype)
    n = d.size if dims is None or not d.ndim else 1
    if dims is not None and d.ndim:
        for i in dims:
            n *= d.shape[i]
    name = "MeanBackward0" if dim is None else "MeanBackward1"
    return record(out.astype(d.dtype, copy=False), (input,), name, _mean_bw, None,
                  (d.shape, dims, keepdim, n))


max_result = return_types.max
min_result = return_types.min


def _evenly_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's evenly_distribute_backward: ties share the gradient equally.
    a, out = saved
    mask = a == out
    if a._data.dtype.kind == "f" and out._data != out._data:  # the result is nan: nans share
        mask = a != a
    return mask * (g / mask.sum())


def _select_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's value_selecting_reduction_backward: the gradient goes to the chosen index.
    shape, dim, keepdim, idx = ctx
    from .indexing import scatter_into_zeros

    if not keepdim:
        g = g.reshape(idx.shape)
    return scatter_into_zeros(g, shape, dim, idx)


def _reduce_minmax(a: Tensor, dim: Any, keepdim: bool, is_max: bool) -> Any:
    d = a._data
    xp = a._backend
    if dim is None:
        if d.size == 0:
            raise RuntimeError(
                f"{'max' if is_max else 'min'}(): Expected reduction dim to be specified for "
                "input.numel() == 0. Specify the reduction dim with the 'dim' argument."
            )
        out = xp.asarray(d.max() if is_max else d.min())
        name = "MaxBackward1" if is_max else "MinBackward1"
        return record(out, (a,), name, _evenly_bw, (a,), None, True)
    if isinstance(dim, Tensor):
        from .select import maximum, minimum

        return maximum(a, dim) if is_max else minimum(a, dim)
    dim = _wrap_dim(dim, d.ndim)
    if d.ndim and d.shape[dim] == 0:
        raise IndexError(
            f"{'max' if is_max else 'min'}(): Expected reduction dim {dim} to have non-zero size."
        )
    src = d if d.ndim else d.reshape(1)
    dd = dim if d.ndim else 0
    keep_idx = xp.argmax(src, axis=dd, keepdims=True) if is_max else\
        xp.argmin(src, axis=dd, keepdims=True)
    vals = xp.take_along_axis(src, keep_idx, axis=dd)
    idx = keep_idx
    if not keepdim or not d.ndim:
        idx = keep_idx.squeeze(dd)
        vals = vals.squeeze(dd)
    if not d.ndim:
        keep_idx = keep_idx.reshape(())
    name = "MaxBackward0" if is_max else "MinBackward0"
    v = record(vals, (a,), name, _select_bw, None, (d.shape, dd, keepdim, keep_idx))
    i = record(idx.astype(_dtype.int64.np, copy=False), (), "", None)
    return (max_result if is_max else min_result)(v, i)


@op(method="max", function="max")
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The largest entry; over dim, (values, indices); with a tensor, the elementwise maximum."""
    return _reduce_minmax(input, dim, keepdim, True)


@op(method="min", function="min")
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The smallest entry; over dim, (values, indices); with a tensor, the elementwise minimum."""
    return _reduce_minmax(input, dim, keepdim, False)
