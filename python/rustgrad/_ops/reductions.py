"""More reductions and scans: logsumexp, prod, cumsum, cumprod, var/std,
norm, dist, amax/amin, all/any, argmax/argmin, topk, sort, argsort.

Reductions work on the input's array with keepdims=True and reshape at the end, so a 0-d input
(reduced over dim 0 or -1, as torch allows) and `keepdim` take the same path; gradients are
reshaped to the keepdim shape and broadcast against the input."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _dtype, return_types
from .._tensor import Tensor, _wrap_dim
from ._declare import op
from ._util import _type_name, cast_grad, promote, record, sum_to
from ._util import const as _const

Dims = Union[int, Sequence[int], None]




def _errstate(xp: Any) -> Any:
    es = getattr(xp, "errstate", None)
    if es is None:
        import contextlib

        return contextlib.nullcontext()
    return es(all="ignore")


def _axes(dim: Dims, ndim: int) -> Tuple[int, ...]:
    """The reduced axes of the (at least 1-D) working array; None or () mean all of them."""
    n = builtins.max(ndim, 1)
    if dim is None:
        return tuple(range(n))
    if isinstance(dim, int):
        return (_wrap_dim(dim, ndim),)
    dims = tuple(_wrap_dim(d, ndim) for d in dim)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"dim {dims[0]} appears multiple times in the list of dims")
    return dims or tuple(range(n))


def _src(d: Any) -> Any:
    return d.reshape(1) if d.ndim == 0 else d


def _out_shape(shape: tuple, axes: tuple, keepdim: bool) -> tuple:
    if not shape:
        return ()
    if keepdim:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _keep_shape(shape: tuple, axes: tuple) -> tuple:
    """The keepdim shape of the working array (shape () works as (1,))."""
    shape = shape or (1,)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _kept(t: Tensor, kshape: tuple) -> Tensor:
    """t (a reduced gradient or result) in the keepdim shape, ready to broadcast."""
    return t if tuple(t._data.shape) == kshape else t.reshape(kshape)


def _back(gx: Tensor, shape: tuple) -> Tensor:
    """A gradient computed on the working array, in the input's shape."""
    return gx if tuple(gx._data.shape) == tuple(shape) else gx.reshape(shape)


def _float_name(d: Any) -> str:
    return _type_name(_dtype.from_np(d.dtype))


# ---- logsumexp ------------------------------------------------------------------------
def _logsumexp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    kshape = ctx
    return _back(_kept(g, kshape) * (a - _kept(out, kshape)).exp(), a._data.shape)


@op(method="logsumexp", function="logsumexp", grad_fn="LogsumexpBackward0")
def logsumexp(input: Tensor, dim: Dims, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over dim, shifted by the max (an infinite max shifts by 0, as torch)."""
    d = input._data
    if d.dtype.kind != "f":
        input = input.to(_dtype.get_default_dtype())
        d = input._data
    xp = input._backend
    src = _src(d)
    axes = _axes(dim, d.ndim)
    with _errstate(xp):
        if src.size:
            m = src.max(axis=axes, keepdims=True)
            m = xp.where(xp.isinf(m), 0, m).astype(d.dtype, copy=False)
            out = xp.log(xp.exp(src - m).sum(axis=axes, keepdims=True)) + m
        else:
            out = xp.log(xp.exp(src).sum(axis=axes, keepdims=True))
    kshape = _keep_shape(d.shape, axes)
    out = out.reshape(_out_shape(d.shape, axes, keepdim)).astype(d.dtype, copy=False)
    return record(out, (input,), "LogsumexpBackward0", _logsumexp_bw, (input,), kshape, True)


# ---- prod, cumsum, cumprod -------------------------------------------------------------
def _prod_safe_zeros_bw(g: Tensor, a: Tensor, dim: int) -> Tensor:
    """torch's prod_safe_zeros_backward: products of everything before and after each
    element (exclusive cumulative products), exact with zeros in the input."""
    from .views import cat, flip, narrow

    if a._data.size == 0:
        return g.expand(a._data.shape)
    n = a._data.shape[dim]
    if n == 1:
        return g.expand(a._data.shape)
    xp = a._backend
    ones_shape = tuple(1 if i == dim else s for i, s in enumerate(a._data.shape))
    ones = _const(xp.ones(ones_shape, dtype=a._data.dtype))
    left = cumprod(cat([ones, narrow(a, dim, 0, n - 1)], dim), dim)
    right = flip(cumprod(cat([ones, flip(narrow(a, dim, 1, n - 1), dim)], dim), dim), dim)
    return g * (left * right)


def _prod_all_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    if a._data.ndim == 0:
        return cast_grad(g, a._data.dtype)
    zeros = int((a._data == 0).sum())
    if zeros == 0:
        return g * (out / a)
    if zeros > 1:
        from .._creation import zeros_like

        return zeros_like(a)
    flat = a.reshape(-1)
    return _prod_safe_zeros_bw(g.reshape(1), flat, 0).reshape(a._data.shape)


def _prod_dim_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    dim, kshape = ctx
    if a._data.ndim == 0:
        return g.reshape(())
    gk, ok = _kept(g, kshape), _kept(out, kshape)
    if not bool((a._data == 0).any()):
        return gk * (ok / a)
    return _prod_safe_zeros_bw(gk, a, dim)


def _reduce_dtype(input: Tensor, dtype: Any) -> Tensor:
    """The input cast for prod/cumsum/cumprod: to `dtype`, or integral and bool to int64."""
    if dtype is not None:
        return input.to(dtype)
    if input._data.dtype.kind in "biu" and input._data.dtype != _dtype.int64.np:
        return _const(input._data.astype(_dtype.int64.np))
    return input


@op(method="prod", function="prod", grad_fn=("ProdBackward0", "ProdBackward1"))
def prod(input: Tensor, dim: Optional[int] = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    input = _reduce_dtype(input, dtype)
    d = input._data
    xp = input._backend
    if dim is None:
        out = xp.asarray(d.prod())
        return record(out, (input,), "ProdBackward0", _prod_all_bw, (input,), None, True)
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    out = src.prod(axis=dim, keepdims=True)
    kshape = _keep_shape(d.shape, (dim,))
    out = out.reshape(_out_shape(d.shape, (dim,), keepdim))
    return record(out, (input,), "ProdBackward1", _prod_dim_bw, (input,), (dim, kshape), True)


def _reverse_cumsum(g: Tensor, dim: int) -> Tensor:
    from .views import flip

    return flip(cumsum(flip(g, dim), dim), dim)


def _cumsum_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch: the gradient is cast to the input's dtype before the reversed cumsum
    dim, dt = ctx
    g = cast_grad(g, dt)
    return g if g._data.ndim == 0 else _reverse_cumsum(g, dim)


@op(method="cumsum", function="cumsum", grad_fn="CumsumBackward0")
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    in_dt = input._data.dtype
    input = _reduce_dtype(input, dtype)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    out = input._backend.cumsum(_src(d), axis=dim).reshape(d.shape)
    return record(out, (input,), "CumsumBackward0", _cumsum_bw, None, (dim, in_dt))


def _cumprod_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    dim = ctx
    if a._data.ndim == 0 or a._data.size == 0:
        return g
    if not bool((a._data == 0).any()):
        return _reverse_cumsum(g * out, dim) / a
    # with zeros: d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k, built for all (k, j)
    from .select import where
    from .views import movedim, triu

    xm = movedim(a, dim, -1)
    gm = movedim(g, dim, -1)
    n = xm._data.shape[-1]
    xp = a._backend
    eye = _const(xp.eye(n, dtype=bool))
    big = xm.unsqueeze(-2).expand(tuple(xm._data.shape[:-1]) + (n, n))
    c = triu(cumprod(where(eye, 1.0, big), -1), 0)
    return movedim((c * gm.unsqueeze(-2)).sum(-1), -1, dim)


@op(method="cumprod", function="cumprod", grad_fn="CumprodBackward0")
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    input = _reduce_dtype(input, dtype)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    out = input._backend.cumprod(_src(d), axis=dim).reshape(d.shape)
    return record(out, (input,), "CumprodBackward0", _cumprod_bw, (input,), dim, True)


# ---- var, std --------------------------------------------------------------------------
def _var_args(dim: Any, unbiased: Any, correction: Any) -> Tuple[Any, float]:
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if correction is not None and unbiased is not None:
        raise RuntimeError("var(): can't specify both unbiased and correction")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _var_forward(input: Tensor, dim: Any, correction: float, keepdim: bool, name: str) -> Any:
    d = input._data
    if d.dtype.kind != "f":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    xp = input._backend
    src = _src(d)
    axes = _axes(dim, d.ndim)
    n = 1
    for ax in axes:
        n *= src.shape[ax]
    dof = builtins.max(0.0, n - correction)
    if dof <= 0:
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=3,
        )
    with _errstate(xp):
        mean = src.mean(axis=axes, keepdims=True) if src.size else \
            xp.full(_keep_shape(d.shape, axes), xp.nan, dtype=d.dtype)
        dev = src - mean
        var_ = (dev * dev).sum(axis=axes, keepdims=True) / d.dtype.type(dof)
    kshape = _keep_shape(d.shape, axes)
    return var_.reshape(_out_shape(d.shape, axes, keepdim)), axes, kshape, dof


def _var_grad(g: Tensor, a: Tensor, axes: tuple, kshape: tuple, dof: float) -> Tensor:
    # torch's var_backward: (2 / dof) * grad * (x - mean)
    scale = 2.0 / dof if dof else math.inf
    src = a if a._data.ndim else a.reshape(1)
    gx = (scale * _kept(g, kshape)) * (src - src.mean(axes, keepdim=True))
    return _back(gx, a._data.shape)


def _var_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return _var_grad(g, a, *ctx)


@op(method="var", function="var", grad_fn="VarBackward0")
def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    dim, correction = _var_args(dim, unbiased, correction)
    out, axes, kshape, dof = _var_forward(input, dim, correction, keepdim, "var")
    return record(out, (input,), "VarBackward0", _var_bw, (input,), (axes, kshape, dof))


def _std_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    return _var_grad(g / (out * 2), a, *ctx)


@op(method="std", function="std", grad_fn="StdBackward0")
def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    dim, correction = _var_args(dim, unbiased, correction)
    out, axes, kshape, dof = _var_forward(input, dim, correction, keepdim, "std")
    out = input._backend.sqrt(out)
    return record(out, (input,), "StdBackward0", _std_bw, (input,), (axes, kshape, dof), True)


@op(function="var_mean")
def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Tuple[Tensor, Tensor]:
    return (var(input, dim, unbiased, keepdim, correction=correction),
            input.mean(_mean_dims(dim, input), keepdim=keepdim))


@op(function="std_mean")
def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Tuple[Tensor, Tensor]:
    return (std(input, dim, unbiased, keepdim, correction=correction),
            input.mean(_mean_dims(dim, input), keepdim=keepdim))


def _mean_dims(dim: Any, input: Tensor) -> Any:
    if isinstance(dim, bool) or dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return None
    return dim


# ---- norm, dist ------------------------------------------------------------------------
def _norm_array(xp: Any, src: Any, p: float, axes: tuple) -> Any:
    """The vector p-norm of src over axes, with keepdims."""
    a = xp.abs(src)
    if p == 2:
        return xp.sqrt((a * a).sum(axis=axes, keepdims=True))
    if p == 1:
        return a.sum(axis=axes, keepdims=True)
    if math.isinf(p):
        if src.size == 0:
            raise RuntimeError(
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
                "operation does not have an identity"
            )
        return a.max(axis=axes, keepdims=True) if p > 0 else a.min(axis=axes, keepdims=True)
    if p == 0:
        return (a != 0).sum(axis=axes, keepdims=True).astype(src.dtype)
    return (a ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)


def _norm_grad(g: Tensor, x: Tensor, norm: Tensor, p: float, axes: tuple) -> Tensor:
    """torch's norm_backward (g and norm in keepdim shape), in rustgrad ops."""
    from .select import where

    if p == 0:
        return None  # torch: no gradient (None) for the 0-"norm"
    if p == 1:
        return x.sign() * g
    zero = norm == 0
    safe = where(zero, 1.0, norm)  # avoids 0-division warnings; masked out below anyway
    if p == 2:
        return x * where(zero, 0.0, g / safe)
    if math.isinf(p):
        xa = x.abs()
        mask = (xa == norm) | xa.isnan()
        return x.sign() * ((g / mask.sum(axes, keepdim=True)) * mask)
    if p < 1:
        xz = x == 0
        scaled = where(xz, 0.0, x.sign() * where(xz, 1.0, x.abs()) ** (p - 1))
        return scaled * g * norm ** (1 - p)
    if p < 2:
        scaled = x.sign() * x.abs() ** (p - 1)
    else:
        scaled = x * x.abs() ** (p - 2)
    return scaled * where(zero, 0.0, g / safe ** (p - 1))


def _norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved
    p, axes, kshape = ctx
    src = a if a._data.ndim else a.reshape(1)
    gx = _norm_grad(_kept(g, kshape), src, _kept(out, kshape), p, axes)
    return None if gx is None else _back(gx, a._data.shape)


def _p_value(p: Any) -> float:
    if isinstance(p, Tensor):
        p = p.item()
    return float(p)


def vector_norm(input: Tensor, ord: Any = 2, dim: Dims = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    d = input._data
    if d.dtype.kind != "f":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{_float_name(d)}"
        )
    if dtype is not None:
        if _dtype.promote_types(input.dtype, dtype) != dtype:
            raise RuntimeError(
                f"linalg.vector_norm: the dtype of the input ({_float_name(d)}) should be "
                f"convertible without narrowing to the specified dtype "
                f"({_type_name(dtype)})"
            )
        input = input.to(dtype)
        d = input._data
    p = _p_value(ord)
    xp = input._backend
    axes = _axes(dim, d.ndim)
    with _errstate(xp):
        out = _norm_array(xp, _src(d), p, axes)
    kshape = _keep_shape(d.shape, axes)
    out = out.reshape(_out_shape(d.shape, axes, keepdim)).astype(d.dtype, copy=False)
    return record(out, (input,), "LinalgVectorNormBackward0", _norm_bw, (input,),
                  (p, axes, kshape), True)


@op(method="norm", function="norm")
def norm(input: Tensor, p: Any = "fro", dim: Dims = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """torch.norm: 'fro' and numbers are vector norms over dim (all dims by default)."""
    if isinstance(p, str):
        if p == "nuc":
            raise NotImplementedError("rustgrad: norm(p='nuc') is not supported")
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if dim is not None and not isinstance(dim, int) and len(dim) > 2:
            raise RuntimeError(
                "linalg.matrix_norm: dim must be a 2-tuple. Got " + " ".join(str(x) for x in dim)
            )
        p = 2
    if p is None:
        p = 2
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


def _dist_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b, out = saved
    p, ash, adt, bsh, bdt = ctx
    diff = a - b
    axes = tuple(range(diff._data.ndim))
    gd = _norm_grad(g, diff, out, p, axes)
    if gd is None:
        return None, None
    ga = cast_grad(sum_to(gd, ash), adt) if a.requires_grad else None
    gb = cast_grad(sum_to(-gd, bsh), bdt) if b.requires_grad else None
    return ga, gb


@op(method="dist", function="dist", grad_fn="DistBackward0")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    ad, bd = promote(input, other)
    if ad.dtype.kind != "f":
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{_float_name(ad)} instead."
        )
    pv = _p_value(p)
    xp = input._backend
    diff = ad - bd
    with _errstate(xp):
        out = _norm_array(xp, _src(diff), pv, tuple(range(builtins.max(diff.ndim, 1))))
    out = out.reshape(()).astype(ad.dtype, copy=False)
    ctx = (pv, input._data.shape, input._data.dtype, other._data.shape, other._data.dtype)
    return record(out, (input, other), "DistBackward0", _dist_bw, (input, other), ctx, True)


# ---- amax / amin -----------------------------------------------------------------------
def _amax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's scale_grad_by_count: ties share the gradient evenly
    a, out = saved
    axes, kshape = ctx
    src = a if a._data.ndim else a.reshape(1)
    mask = src == _kept(out, kshape)
    gx = (_kept(g, kshape) / mask.sum(axes, keepdim=True)) * mask
    return _back(gx, a._data.shape)


def _amax(input: Tensor, dim: Dims, keepdim: bool, is_max: bool) -> Tensor:
    d = input._data
    name = "amax" if is_max else "amin"
    axes = _axes(dim if dim is not None else (), d.ndim)
    src = _src(d)
    if src.size == 0:
        if dim is None or (not isinstance(dim, int) and len(dim) == 0):
            raise RuntimeError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        for ax in axes:
            if src.shape[ax] == 0:
                raise IndexError(
                    f"{name}(): Expected reduction dim {ax} to have non-zero size."
                )
    out = src.max(axis=axes, keepdims=True) if is_max else src.min(axis=axes, keepdims=True)
    kshape = _keep_shape(d.shape, axes)
    out = out.reshape(_out_shape(d.shape, axes, keepdim))
    return record(out, (input,), "AmaxBackward0" if is_max else "AminBackward0", _amax_bw,
                  (input,), (axes, kshape), True)


@op(method="amax", function="amax")
def amax(input: Tensor, dim: Dims = (), keepdim: bool = False) -> Tensor:
    return _amax(input, dim, keepdim, True)


@op(method="amin", function="amin")
def amin(input: Tensor, dim: Dims = (), keepdim: bool = False) -> Tensor:
    return _amax(input, dim, keepdim, False)


# ---- all / any -------------------------------------------------------------------------
def _all_any(input: Tensor, dim: Dims, keepdim: bool, is_all: bool) -> Tensor:
    d = input._data
    axes = _axes(dim, d.ndim)
    src = _src(d)
    out = src.all(axis=axes, keepdims=True) if is_all else src.any(axis=axes, keepdims=True)
    out = out.reshape(_out_shape(d.shape, axes, keepdim))
    if d.dtype == _dtype.uint8.np:
        out = out.astype(d.dtype)
    return _const(out)


@op(method="all", function="all")
def all(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return _all_any(input, dim, keepdim, True)


@op(method="any", function="any")
def any(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    return _all_any(input, dim, keepdim, False)


# ---- argmax / argmin -------------------------------------------------------------------
def _arg(input: Tensor, dim: Optional[int], keepdim: bool, is_max: bool) -> Tensor:
    d = input._data
    xp = input._backend
    name = "argmax" if is_max else "argmin"
    if d.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    fn = xp.argmax if is_max else xp.argmin
    if dim is None:
        if d.size == 0:
            raise IndexError(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
            )
        out = xp.asarray(fn(d.reshape(-1)))
        if keepdim:
            out = out.reshape((1,) * d.ndim)
    else:
        dim = _wrap_dim(dim, d.ndim)
        src = _src(d)
        if src.shape[dim] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {dim} to have non-zero size.")
        out = fn(src, axis=dim, keepdims=True).reshape(_out_shape(d.shape, (dim,), keepdim))
    return _const(out.astype(_dtype.int64.np, copy=False))


@op(method="argmax", function="argmax")
def argmax(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _arg(input, dim, keepdim, True)


@op(method="argmin", function="argmin")
def argmin(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    return _arg(input, dim, keepdim, False)


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
    from .gather import scatter_add_into_zeros

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
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    idx = _order(input._backend, _src(d), dim, descending)
    return _const(idx.reshape(d.shape).astype(_dtype.int64.np, copy=False))


@op(method="topk", function="topk", grad_fn="TopkBackward0")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    n = src.shape[dim]
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
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

