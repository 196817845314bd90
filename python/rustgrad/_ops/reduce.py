"""Reductions and scans: sum, mean, max/min (whole tensor, and over a dim giving (values,
indices)), logsumexp, prod, cumsum, cumprod, var/std, norm, dist, amax/amin, all/any,
argmax/argmin.

Most reductions work on the input's array with keepdims=True and reshape at the end, so a 0-d
input (reduced over dim 0 or -1, as torch allows) and `keepdim` take the same path; gradients are
reshaped to the keepdim shape and broadcast against the input."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _creation, _dtype, return_types
from .._backends import _NDARRAY
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._unary import refuse_complex
from ._util import NOT_IMPLEMENTED, _type_name, cast_grad, is_bf16, opmath, promote, quiet_fp, sum_to
from ._util import const as _const
from .compare import maximum, minimum, where
from .copies import flip, triu
from .copyslices import inplace_from
from .gather import scatter_add_into_zeros
from .indexing import scatter_into_zeros
from .joins import cat
from .views import movedim, narrow

Dims = Union[int, Sequence[int], None]
_F16 = _dtype.float16.np
_F32 = _dtype.float32.np


def _low_precision(np_dtype: Any) -> bool:
    """float16 and bfloat16: torch's CPU reductions accumulate these in float32."""
    return np_dtype == _F16 or is_bf16(np_dtype)


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


# torch's _saved_ attributes of a reduction over dims (ctx starts with shape, dims, keepdim)
_SAVED_DIMS = {
    "dim": lambda s, c: c[1],
    "keepdim": lambda s, c: c[2],
    "self_sym_sizes": lambda s, c: tuple(c[0]),
}
def _sum_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    shape, dims, keepdim = ctx[:3]
    t = tangents[0]
    if not shape:
        return t.sum()
    return t.sum(tuple(range(len(shape))) if dims is None else dims, keepdim)


SUM = node("SumBackward0", _sum_bw, getters={"self_sym_sizes": _SAVED_DIMS["self_sym_sizes"]},
           forward=_sum_fw)
SUM_DIM = node("SumBackward1", _sum_bw, getters=_SAVED_DIMS, forward=_sum_fw)


@op(method="sum", function="sum", grad_fn=("SumBackward0", "SumBackward1"), autocast=dict(cuda="fp32_set_opt_dtype"))
def sum(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum of all entries, or over dim.

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.
        dtype (rustgrad.dtype, optional): keyword-only; the dtype to sum in and return. Bool and
            integer inputs sum as int64 by default.

    The gradient is the incoming gradient broadcast back to input's shape.

    Example::

        >>> x = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> x.sum()
        tensor(10.)
        >>> x.sum(dim=0)
        tensor([4., 6.])
        >>> x.sum(1, keepdim=True)
        tensor([[3.],
                [7.]])
    """
    d = input._data
    dims = _dims(dim, d.ndim)
    np_dtype = _dtype.to_np(dtype)
    if np_dtype is None and d.dtype.kind in "bu" or (d.dtype.kind == "i" and np_dtype is None):
        np_dtype = _dtype.int64.np
    if _low_precision(np_dtype if np_dtype is not None else d.dtype):
        # torch accumulates (b)float16 in float32 and rounds once; NumPy would round every step
        out = d.sum(axis=dims if d.ndim else None, keepdims=keepdim, dtype=_F32)
        out = out.astype(np_dtype if np_dtype is not None else d.dtype)
    elif type(d) is _NDARRAY:  # ndarray.sum without NumPy's Python layer: the same reduction
        out = input._backend.add.reduce(d, dims if d.ndim else None, np_dtype, None, keepdim)
    else:
        out = d.sum(axis=dims if d.ndim else None, keepdims=keepdim, dtype=np_dtype)
    if (dims is None or not d.ndim) and not keepdim:
        out = input._backend.asarray(out)
    return (SUM if dim is None else SUM_DIM).record(out, (input,), (d.shape, dims, keepdim))


def _mean_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dims, keepdim, n = ctx
    return _expand_back(g, shape, dims, keepdim) / n


def _mean_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    return _sum_fw(tangents, saved, ctx) / ctx[3]


MEAN = node("MeanBackward0", _mean_bw, forward=_mean_fw)
MEAN_DIM = node("MeanBackward1", _mean_bw, getters=_SAVED_DIMS, forward=_mean_fw)


@op(method="mean", function="mean", grad_fn=("MeanBackward0", "MeanBackward1"))
def mean(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of all entries, or over dim.

    Args:
        input (Tensor): the input tensor (floating point, or give dtype).
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.

    Example::

        >>> x = rustgrad.tensor([[1., 2.], [3., 4.]])
        >>> x.mean()
        tensor(2.5000)
        >>> x.mean(dim=1)
        tensor([1.5000, 3.5000])
    """
    d = input._data
    if d.dtype.kind != "c" and not _dtype.is_floating_np(d.dtype) and dtype is None:
        raise NotImplementedError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_name(_dtype.from_np(d.dtype))}"
        )
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise NotImplementedError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {_type_name(dtype)}"
        )
    dims = _dims(dim, d.ndim)
    if dtype is not None:
        d = d.astype(_dtype.to_np(dtype))
    axis = dims if d.ndim else None
    acc = _F32 if _low_precision(d.dtype) else None
    n = d.size if dims is None or not d.ndim else 1
    if dims is not None and d.ndim:
        for i in dims:
            n *= d.shape[i]
    if d.size == 0:  # torch gives nan silently; NumPy warns "Mean of empty slice"

        with warnings.catch_warnings(), input._backend.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            out = d.mean(axis=axis, keepdims=keepdim, dtype=acc)
    elif acc is None and type(d) is _NDARRAY and d.dtype.kind == "f":
        # NumPy's mean without its Python layer: the same sum, divided by the count
        out = input._backend.add.reduce(d, axis, None, None, keepdim) / n
    else:
        out = d.mean(axis=axis, keepdims=keepdim, dtype=acc)
    if (dims is None or not d.ndim) and not keepdim:
        out = input._backend.asarray(out, dtype=d.dtype)
    return (MEAN if dim is None else MEAN_DIM).record(out.astype(d.dtype, copy=False), (input,),
                                                      (d.shape, dims, keepdim, n))


max_result = return_types.max
min_result = return_types.min


def _evenly_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's evenly_distribute_backward: ties share the gradient equally.
    a, out = saved.self, saved.result
    mask = a == out
    if _dtype.is_floating_np(a._data.dtype) and out._data != out._data:  # the result is nan: nans share
        mask = a != a

    # a selection, not a product: a NaN upstream reaches only the chosen entries, as torch's
    return where(mask, g / mask.sum(), 0.0)


def _select_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's value_selecting_reduction_backward: the gradient goes to the chosen index.
    shape, dim, keepdim, idx = ctx

    if not keepdim:
        g = g.reshape(idx.shape)
    return scatter_into_zeros(g, shape, dim, idx)


MAX = node("MaxBackward1", _evenly_bw, saved=("self",), result=True)
MIN = node("MinBackward1", _evenly_bw, saved=("self",), result=True)
MAX_DIM = node("MaxBackward0", _select_bw)
MIN_DIM = node("MinBackward0", _select_bw)


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
        return (MAX if is_max else MIN).record(out, (a,), self=a)
    if isinstance(dim, Tensor):
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
    v = (MAX_DIM if is_max else MIN_DIM).record(vals, (a,), (d.shape, dd, keepdim, keep_idx))
    i = _const(idx.astype(_dtype.int64.np, copy=False))
    return (max_result if is_max else min_result)(v, i)


@op(method="max", function="max", grad_fn=("MaxBackward0", "MaxBackward1"))
def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The largest entry; over dim, (values, indices); with a tensor, the elementwise maximum.

    Args:
        dim (int or Tensor, optional): the dim to reduce, giving a named tuple (values,
            indices); a tensor here means rustgrad.maximum(input, dim).

    The gradient: over dim, each row's gradient goes to the entry at the returned index (the
    first largest); over all entries, it is shared evenly among the entries equal to the max.

    Example::

        >>> x = rustgrad.tensor([[1., 5., 5.], [7., 2., 0.]], requires_grad=True)
        >>> x.max()
        tensor(7., grad_fn=<MaxBackward1>)
        >>> x.max(dim=1)
        torch.return_types.max(
        values=tensor([5., 7.], grad_fn=<MaxBackward0>),
        indices=tensor([1, 0]))
        >>> x.max(dim=1).values.sum().backward()
        >>> x.grad
        tensor([[0., 1., 0.],
                [1., 0., 0.]])
    """
    return _reduce_minmax(input, dim, keepdim, True)


@op(method="min", function="min", grad_fn=("MinBackward0", "MinBackward1"))
def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:
    """The smallest entry; over dim, (values, indices); with a tensor, the elementwise minimum.

    Args:
        dim (int or Tensor, optional): the dim to reduce, giving a named tuple (values,
            indices); a tensor here means rustgrad.minimum(input, dim).

    The gradient follows max's rule: to the returned index over dim, shared among ties overall.

    Example::

        >>> x = rustgrad.tensor([[1., 5.], [0., 0.]])
        >>> x.min()
        tensor(0.)
        >>> x.min(dim=1)
        torch.return_types.min(
        values=tensor([1., 0.]),
        indices=tensor([0, 0]))
    """
    return _reduce_minmax(input, dim, keepdim, False)


# ---- logsumexp, prod, scans, moments, norms, extrema, logical reductions -------------------


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
def _logsumexp_bw(g: Tensor, saved: Any, kshape: Any) -> Any:
    a = saved.self
    return _back(_kept(g, kshape) * (a - _kept(saved.result, kshape)).exp(), a._data.shape)


LOGSUMEXP = node("LogsumexpBackward0", _logsumexp_bw, saved=("self",), result=True)


@op(method="logsumexp", function="logsumexp", grad_fn="LogsumexpBackward0", autocast=dict(cuda="fp32"))
def logsumexp(input: Tensor, dim: Dims, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input))) over dim, computed stably by shifting with the max.

    Args:
        dim (int or tuple of ints): the dims to reduce.

    The gradient is softmax(input) over dim.

    Example::

        >>> rustgrad.tensor([[0., 0.], [1000., 1000.]]).logsumexp(dim=1)
        tensor([6.9315e-01, 1.0007e+03])
    """
    d = input._data
    if d.dtype.kind == "c":
        refuse_complex("logsumexp", input)
    if not _dtype.is_floating_np(d.dtype):
        input = input.to(_dtype.get_default_dtype())
        d = input._data
    xp = input._backend
    src = opmath(_src(d))
    axes = _axes(dim, d.ndim)
    with quiet_fp(xp):
        if src.size:
            m = src.max(axis=axes, keepdims=True)
            m = xp.where(xp.isinf(m), 0, m).astype(src.dtype, copy=False)
            out = xp.log(xp.exp(src - m).sum(axis=axes, keepdims=True)) + m
        else:
            out = xp.log(xp.exp(src).sum(axis=axes, keepdims=True))
    kshape = _keep_shape(d.shape, axes)
    out = out.reshape(_out_shape(d.shape, axes, keepdim)).astype(d.dtype, copy=False)
    return LOGSUMEXP.record(out, (input,), kshape, self=input)


# ---- prod, cumsum, cumprod -------------------------------------------------------------
def _prod_safe_zeros_bw(g: Tensor, a: Tensor, dim: int) -> Tensor:
    """torch's prod_safe_zeros_backward: products of everything before and after each
    element (exclusive cumulative products), exact with zeros in the input."""
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
    a, out = saved.self, saved.result
    if a._data.ndim == 0:
        return g
    zeros = int((a._data == 0).sum())
    if zeros == 0:
        return g * (out / a)
    if zeros > 1:
        return _creation.zeros_like(a)
    flat = a.reshape(-1)
    return _prod_safe_zeros_bw(g.reshape(1), flat, 0).reshape(a._data.shape)


def _prod_dim_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, out = saved.self, saved.result
    dim, kshape = ctx
    if a._data.ndim == 0:
        return g.reshape(())
    gk, ok = _kept(g, kshape), _kept(out, kshape)
    if not bool((a._data == 0).any()):
        return gk * (ok / a)
    return _prod_safe_zeros_bw(gk, a, dim)


PROD = node("ProdBackward0", _prod_all_bw, saved=("self",), result=True)
PROD_DIM = node("ProdBackward1", _prod_dim_bw, saved=("self",), result=True)


def _reduce_dtype(input: Tensor, dtype: Any) -> Tensor:
    """The input cast for prod/cumsum/cumprod: to `dtype`, or integral and bool to int64."""
    if dtype is not None:
        return input.to(dtype)
    if input._data.dtype.kind in "biu" and input._data.dtype != _dtype.int64.np:
        return _const(input._data.astype(_dtype.int64.np))
    return input


@op(method="prod", function="prod", grad_fn=("ProdBackward0", "ProdBackward1"),
    autocast=dict(cuda="fp32_set_opt_dtype", cpu="fp32"))
def prod(input: Tensor, dim: Optional[int] = None, keepdim: bool = False, *,
         dtype: Any = None) -> Tensor:
    """The product of all entries, or over dim.

    Args:
        dim (int, optional): the dim to reduce; all entries when None.

    The gradient is the product of the other entries, exact also where input has zeros.

    Example::

        >>> x = rustgrad.tensor([2., 0., 3.], requires_grad=True)
        >>> x.prod()
        tensor(0., grad_fn=<ProdBackward0>)
        >>> x.prod().backward()
        >>> x.grad
        tensor([0., 6., 0.])
    """
    input = _reduce_dtype(input, dtype)
    d = input._data
    xp = input._backend
    if dim is None:
        out = xp.asarray(d.prod())
        return PROD.record(out, (input,), self=input)
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    out = src.prod(axis=dim, keepdims=True)
    kshape = _keep_shape(d.shape, (dim,))
    out = out.reshape(_out_shape(d.shape, (dim,), keepdim))
    return PROD_DIM.record(out, (input,), (dim, kshape), self=input)


def _reverse_cumsum(g: Tensor, dim: int) -> Tensor:
    return flip(cumsum(flip(g, dim), dim), dim)


def _running(input: Tensor, dim: int, dtype: Any, name: str) -> Tuple[Tensor, Any, int]:
    """(input cast to `dtype`, its running sums or products (the backend's `name`) along dim,
    dim wrapped)."""
    input = _reduce_dtype(input, dtype)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    return input, getattr(input._backend, name)(_src(d), axis=dim, dtype=d.dtype).reshape(d.shape), dim


def _cumsum_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch: the gradient is cast to the input's dtype before the reversed cumsum. With `dtype=`
    # that is the dtype of the tensor before its cast (this node's input is the cast one), so
    # the engine's cast after the formula would come too late: the cumsum is summed in it.
    dim, dt = ctx
    g = cast_grad(g, dt)
    return g if g._data.ndim == 0 else _reverse_cumsum(g, dim)


CUMSUM = node("CumsumBackward0", _cumsum_bw)


@op(method="cumsum", function="cumsum", grad_fn="CumsumBackward0", autocast=dict(cuda="fp32_set_opt_dtype"))
def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running sums along dim.

    Args:
        dim (int): the dim to sum along.

    Example::

        >>> rustgrad.tensor([1, 2, 3, 4]).cumsum(0)
        tensor([ 1,  3,  6, 10])
    """
    in_dt = input._data.dtype
    input, out, dim = _running(input, dim, dtype, "cumsum")
    return CUMSUM.record(out, (input,), (dim, in_dt))


def _cumprod_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    a, out = saved.self, saved.result
    if a._data.ndim == 0 or a._data.size == 0:
        return g
    if not bool((a._data == 0).any()):
        return _reverse_cumsum(g * out, dim) / a
    # with zeros: d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k, built for all (k, j)
    xm = movedim(a, dim, -1)
    gm = movedim(g, dim, -1)
    n = xm._data.shape[-1]
    xp = a._backend
    eye = _const(xp.eye(n, dtype=bool))
    big = xm.unsqueeze(-2).expand(tuple(xm._data.shape[:-1]) + (n, n))
    c = triu(cumprod(where(eye, 1.0, big), -1), 0)
    return movedim((c * gm.unsqueeze(-2)).sum(-1), -1, dim)


CUMPROD = node("CumprodBackward0", _cumprod_bw, saved=("self",), result=True)


@op(method="cumprod", function="cumprod", grad_fn="CumprodBackward0", autocast=dict(cuda="fp32_set_opt_dtype"))
def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """Running products along dim.

    Args:
        dim (int): the dim to multiply along.

    Example::

        >>> rustgrad.tensor([1., 2., 3., 4.]).cumprod(0)
        tensor([ 1.,  2.,  6., 24.])
    """
    input, out, dim = _running(input, dim, dtype, "cumprod")
    return CUMPROD.record(out, (input,), dim, self=input)


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
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError("std and var only support floating point and complex dtypes")
    xp = input._backend
    src = opmath(_src(d))
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
    with quiet_fp(xp):
        mean = src.mean(axis=axes, keepdims=True) if src.size else \
            xp.full(_keep_shape(d.shape, axes), xp.nan, dtype=src.dtype)
        dev = src - mean
        var_ = (dev * dev).sum(axis=axes, keepdims=True) / src.dtype.type(dof)
    kshape = _keep_shape(d.shape, axes)
    return var_.reshape(_out_shape(d.shape, axes, keepdim)), axes, kshape, dof


def _var_grad(g: Tensor, a: Tensor, axes: tuple, kshape: tuple, dof: float) -> Tensor:
    # torch's var_backward: (2 / dof) * grad * (x - mean)
    scale = 2.0 / dof if dof else math.inf
    src = a if a._data.ndim else a.reshape(1)
    gx = (scale * _kept(g, kshape)) * (src - src.mean(axes, keepdim=True))
    return _back(gx, a._data.shape)


def _var_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _var_grad(g, saved.self, *ctx)


VAR = node("VarBackward0", _var_bw, saved=("self",))


@op(method="var", function="var", grad_fn="VarBackward0")
def var(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """The variance over dim (all entries by default), with Bessel's correction unless told otherwise.

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.
        unbiased (bool, optional): the older spelling of correction=1 (True) or 0 (False).
        correction (int, optional): keyword-only; the divisor is N - correction. Default: 1.

    Example::

        >>> x = rustgrad.tensor([1., 2., 3., 4.])
        >>> x.var()
        tensor(1.6667)
        >>> x.var(correction=0)
        tensor(1.2500)
    """
    dim, correction = _var_args(dim, unbiased, correction)
    out, axes, kshape, dof = _var_forward(input, dim, correction, keepdim, "var")
    out = out.astype(input._data.dtype, copy=False)  # bfloat16: computed in float32
    return VAR.record(out, (input,), (axes, kshape, dof), self=input)


def _std_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _var_grad(g / (saved.result * 2), saved.self, *ctx)


STD = node("StdBackward0", _std_bw, saved=("self",), result=True)


@op(method="std", function="std", grad_fn="StdBackward0")
def std(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
        correction: Any = None) -> Tensor:
    """The standard deviation over dim (all entries by default), with Bessel's correction by default.

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.
        unbiased (bool, optional): the older spelling of correction=1 (True) or 0 (False).
        correction (int, optional): keyword-only; the divisor is N - correction. Default: 1.

    Example::

        >>> rustgrad.tensor([[1., 3.], [2., 2.]]).std(dim=1)
        tensor([1.4142, 0.0000])
    """
    dim, correction = _var_args(dim, unbiased, correction)
    out, axes, kshape, dof = _var_forward(input, dim, correction, keepdim, "std")
    out = input._backend.sqrt(out).astype(input._data.dtype, copy=False)
    return STD.record(out, (input,), (axes, kshape, dof), self=input)


@op(function="var_mean")
def var_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Tuple[Tensor, Tensor]:
    """(variance, mean) over dim, in one call."""
    return (var(input, dim, unbiased, keepdim, correction=correction),
            input.mean(_mean_dims(dim, input), keepdim=keepdim))


@op(function="std_mean")
def std_mean(input: Tensor, dim: Any = None, unbiased: Any = None, keepdim: bool = False, *,
             correction: Any = None) -> Tuple[Tensor, Tensor]:
    """(standard deviation, mean) over dim, in one call."""
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
        empty = [ax for ax in axes if src.shape[ax] == 0]
        if empty and len(axes) == src.ndim:
            raise RuntimeError(
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because the "
                "operation does not have an identity"
            )
        if empty:  # torch's wording, its missing space included
            raise RuntimeError(
                f"linalg.vector_norm cannot compute the inf norm on the dimension {empty[0]}"
                "because this dimension is empty and the operation does not have an identity"
            )
        return a.max(axis=axes, keepdims=True) if p > 0 else a.min(axis=axes, keepdims=True)
    if p == 0:
        return (a != 0).sum(axis=axes, keepdims=True).astype(src.dtype)
    return (a ** p).sum(axis=axes, keepdims=True) ** (1.0 / p)


def _norm_grad(g: Tensor, x: Tensor, norm: Tensor, p: float, axes: tuple) -> Tensor:
    """torch's norm_backward (g and norm in keepdim shape), in rustgrad ops."""
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
    a = saved.self
    p, axes, kshape = ctx
    src = a if a._data.ndim else a.reshape(1)
    gx = _norm_grad(_kept(g, kshape), src, _kept(saved.result, kshape), p, axes)
    return None if gx is None else _back(gx, a._data.shape)


NORM = node("LinalgVectorNormBackward0", _norm_bw, saved=("self",), result=True)


def _p_value(p: Any) -> float:
    if isinstance(p, Tensor):
        p = p.item()
    return float(p)


def vector_norm(input: Tensor, ord: Any = 2, dim: Dims = None, keepdim: bool = False, *,
                dtype: Any = None) -> Tensor:
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(
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
    with quiet_fp(xp):
        out = _norm_array(xp, opmath(_src(d)), p, axes)
    kshape = _keep_shape(d.shape, axes)
    out = out.reshape(_out_shape(d.shape, axes, keepdim)).astype(d.dtype, copy=False)
    return NORM.record(out, (input,), (p, axes, kshape), self=input)


@op(method="norm", function="norm", grad_fn="LinalgVectorNormBackward0", autocast=dict(cuda="fp32_append_dtype"))
def norm(input: Tensor, p: Any = "fro", dim: Dims = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """torch.norm: the p-norm over dim (all dims by default); 'fro' is the 2-norm of the entries.

    Args:
        p (float or str, optional): the order: a number (inf and -inf included) or "fro".
            Default: "fro".
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.
        dtype (rustgrad.dtype, optional): the dtype to compute in and return.

    The 2-norm's gradient at a zero input is 0 (not NaN), as torch's.

    Example::

        >>> x = rustgrad.tensor([[3., 4.], [0., 1.]])
        >>> x.norm()
        tensor(5.0990)
        >>> x.norm(dim=1)
        tensor([5., 1.])
        >>> x.norm(p=1)
        tensor(8.)
    """
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


def _dist_bw(g: Tensor, saved: Any, p: Any) -> Any:
    a, b = saved.self, saved.other
    diff = a - b
    axes = tuple(range(diff._data.ndim))
    gd = _norm_grad(g, diff, saved.result, p, axes)
    if gd is None:
        return None, None
    # summed to each input's shape here: the output is 0-d, so a 0-d input broadcast against
    # the other has the output's shape and the engine (Note [Input metadata]) would not sum it
    ga = sum_to(gd, a._data.shape) if a.requires_grad else None
    gb = sum_to(-gd, b._data.shape) if b.requires_grad else None
    return ga, gb


DIST = node("DistBackward0", _dist_bw, saved=("self", "other"), result=True)


@op(method="dist", function="dist", grad_fn="DistBackward0", autocast=dict(cuda="fp32"))
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The p-norm of input - other.

    Args:
        input (Tensor): the first tensor.
        other (Tensor): the second tensor, broadcast with input.
        p (float, optional): the norm's order. Default: 2.

    Example::

        >>> rustgrad.dist(rustgrad.tensor([0., 0.]), rustgrad.tensor([3., 4.]))
        tensor(5.)
    """
    ad, bd = promote(input, other)
    if not _dtype.is_floating_np(ad.dtype):
        raise NotImplementedError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{_float_name(ad)} instead."
        )
    pv = _p_value(p)
    xp = input._backend
    diff = ad - bd
    with quiet_fp(xp):
        out = _norm_array(xp, opmath(_src(diff)), pv, tuple(range(builtins.max(diff.ndim, 1))))
    out = out.reshape(()).astype(ad.dtype, copy=False)
    return DIST.record(out, (input, other), pv, self=input, other=other)


# ---- amax / amin -----------------------------------------------------------------------
def _amax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's scale_grad_by_count: ties share the gradient evenly
    a, out = saved.self, saved.result
    axes, kshape = ctx
    src = a if a._data.ndim else a.reshape(1)
    mask = src == _kept(out, kshape)
    gx = (_kept(g, kshape) / mask.sum(axes, keepdim=True)) * mask
    return _back(gx, a._data.shape)


AMAX = node("AmaxBackward0", _amax_bw, saved=("self",), result=True)
AMIN = node("AminBackward0", _amax_bw, saved=("self",), result=True)


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
    return (AMAX if is_max else AMIN).record(out, (input,), (axes, kshape), self=input)


@op(method="amax", function="amax", grad_fn="AmaxBackward0")
def amax(input: Tensor, dim: Dims = (), keepdim: bool = False) -> Tensor:
    """The largest entries over dim (the gradient is shared evenly among ties).

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when empty.

    Unlike max(dim), the gradient is split evenly among all entries equal to the max.

    Example::

        >>> x = rustgrad.tensor([[1., 3., 3.]], requires_grad=True)
        >>> x.amax(dim=1)
        tensor([3.], grad_fn=<AmaxBackward0>)
        >>> x.amax(dim=1).sum().backward()
        >>> x.grad
        tensor([[0.0000, 0.5000, 0.5000]])
    """
    return _amax(input, dim, keepdim, True)


@op(method="amin", function="amin", grad_fn="AminBackward0")
def amin(input: Tensor, dim: Dims = (), keepdim: bool = False) -> Tensor:
    """The smallest entries over dim (the gradient is shared evenly among ties).

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when empty.

    Example::

        >>> rustgrad.tensor([[1., 3.], [0., -2.]]).amin(dim=0)
        tensor([ 0., -2.])
    """
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
    """Whether every entry is non-zero, overall or over dim (a bool tensor).

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.

    Example::

        >>> x = rustgrad.tensor([[True, False], [True, True]])
        >>> x.all()
        tensor(False)
        >>> x.all(dim=1)
        tensor([False,  True])
    """
    return _all_any(input, dim, keepdim, True)


@op(method="any", function="any")
def any(input: Tensor, dim: Dims = None, keepdim: bool = False) -> Tensor:
    """Whether some entry is non-zero, overall or over dim (a bool tensor).

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.

    Example::

        >>> rustgrad.tensor([[0, 0], [0, 3]]).any(dim=1)
        tensor([False,  True])
    """
    return _all_any(input, dim, keepdim, False)


# ---- argmax / argmin -------------------------------------------------------------------
def _arg(input: Tensor, dim: Optional[int], keepdim: bool, is_max: bool) -> Tensor:
    d = input._data
    xp = input._backend
    name = "argmax" if is_max else "argmin"
    if d.dtype.kind == "b":
        raise NotImplementedError(f"{name}(): does not support bool input")
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
    """The index of the largest entry, overall (flattened) or over dim (the first among ties).

    Args:
        dim (int, optional): the dim to reduce; the flattened input when None.

    Example::

        >>> x = rustgrad.tensor([[1., 9., 9.], [4., 2., 0.]])
        >>> x.argmax()
        tensor(1)
        >>> x.argmax(dim=1)
        tensor([1, 0])
    """
    return _arg(input, dim, keepdim, True)


@op(method="argmin", function="argmin")
def argmin(input: Tensor, dim: Optional[int] = None, keepdim: bool = False) -> Tensor:
    """The index of the smallest entry, overall (flattened) or over dim (the first among ties).

    Args:
        dim (int, optional): the dim to reduce; the flattened input when None.

    Example::

        >>> rustgrad.tensor([[1., 0.], [4., 2.]]).argmin(dim=0)
        tensor([0, 0])
    """
    return _arg(input, dim, keepdim, False)


# ---- count_nonzero, bincount, diff -------------------------------------------------------------
@op(method="count_nonzero", function="count_nonzero")
def count_nonzero(input: Tensor, dim: Dims = None) -> Tensor:
    """The number of non-zero entries, over all of input or along dim (int64).

    Args:
        dim (int or tuple of ints, optional): the dims to count along.

    Example::

        >>> rustgrad.tensor([[0, 1], [2, 3]]).count_nonzero(dim=0)
        tensor([1, 2])
    """
    d = input._data
    xp = input._backend
    axes = None
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        axes = tuple(_wrap_dim(k, d.ndim) for k in dims)
        for k in axes:
            if axes.count(k) > 1:
                raise RuntimeError(f"dim {k} appears multiple times in the list of dims")
        if d.ndim == 0:
            axes = None
    out = xp.count_nonzero(d != 0, axis=axes)
    return _const(xp.asarray(out).astype(_dtype.int64.np))


@op(method="bincount", function="bincount", grad_fn="torch::autograd::NotImplemented")
def bincount(input: Tensor, weights: Optional[Tensor] = None, minlength: int = 0) -> Tensor:
    """Counts of each value in a 1-d non-negative int tensor (or sums of weights per value)."""
    d = input._data
    xp = input._backend
    if d.dtype.kind not in "biu":
        raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                  f"'{_type_name(_dtype.from_np(d.dtype))}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if d.ndim != 1 or (d.size and int(d.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights._data.ndim != 1 or weights._data.shape[0] != d.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = builtins.max(int(d.max()) + 1 if d.size else 0, minlength)
    idx = d.astype(_dtype.int64.np)
    if weights is None:
        return _const(xp.bincount(idx, minlength=n).astype(_dtype.int64.np))
    w = weights._data
    # torch sums float32 weights in float32 and any other weights in float64
    wdt = _F32 if w.dtype == _F32 else _dtype.float64.np
    out = xp.zeros(n, dtype=wdt)
    if hasattr(xp, "add_at"):
        xp.add_at(out, idx, w.astype(wdt))
    else:
        xp.add.at(out, idx, w.astype(wdt))
    return NOT_IMPLEMENTED.record(out, (weights,), "bincount")


@op(method="diff", function="diff")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Optional[Tensor] = None,
         append: Optional[Tensor] = None) -> Tensor:
    """The n-th forward difference along dim, after prepend/append are concatenated.

    Args:
        n (int, optional): how many times to difference. Default: 1.
        dim (int, optional): the dim to difference along. Default: -1.
        prepend (Tensor, optional): values put before input along dim.
        append (Tensor, optional): values put after input along dim.

    Example::

        >>> rustgrad.tensor([1, 4, 9, 16]).diff()
        tensor([3, 5, 7])
        >>> rustgrad.tensor([1, 4, 9, 16]).diff(n=2)
        tensor([2, 2])
    """
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _wrap_dim(dim, nd)
    parts = []
    for extra in (prepend, input, append):
        if extra is None:
            continue
        if extra is not input and extra._data.ndim != nd:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        parts.append(extra)
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi, lo = narrow(x, dim, 1, length - 1), narrow(x, dim, 0, length - 1)
        x = hi.logical_xor(lo) if x._data.dtype.kind == "b" else hi - lo
    return x


# ---- cummax, cummin, logcumsumexp, cumsum_, cumprod_ ------------------------------------------
def _scan(xp: Any, a: Any, axis: int, fn: Any) -> Any:
    """The inclusive scan of `a` along axis under the associative `fn(earlier, later)`, in
    log2(n) elementwise steps (CuPy's ufunc.accumulate takes only `add`)."""
    n = a.shape[axis]
    lead = (slice(None),) * axis
    step = 1
    while step < n:
        b = a.copy()
        b[lead + (slice(step, None),)] = fn(a[lead + (slice(0, n - step),)],
                                            a[lead + (slice(step, None),)])
        a = b
        step *= 2
    return a


def _cum_extreme_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # each running extreme's gradient goes to the entry it was taken from (torch's scatter_add)
    shape, dim, idx = ctx
    if g._data.size == 0:
        return g
    return scatter_add_into_zeros(g, shape, dim, idx)


_SAVED_CUM = {"dim": lambda s, c: c[1]}
CUMMAX = node("CummaxBackward0", _cum_extreme_bw, saved=("self", "indices"), getters=_SAVED_CUM)
CUMMIN = node("CumminBackward0", _cum_extreme_bw, saved=("self", "indices"), getters=_SAVED_CUM)


def _cum_extreme(input: Tensor, dim: int, is_max: bool) -> Any:
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    fn = xp.maximum if is_max else xp.minimum
    run = _scan(xp, src, dim, fn)  # NaN propagates through maximum/minimum, as in torch
    # the index is the last entry up to here that equals the running extreme (ties move it
    # forward, as torch's); every NaN is such an entry once the running value is NaN
    hit = src == run
    if _dtype.is_floating_np(src.dtype):
        hit = hit | (src != src)
    pos_shape = tuple(-1 if i == dim else 1 for i in range(src.ndim))
    pos = xp.arange(src.shape[dim], dtype=_dtype.int64.np).reshape(pos_shape)
    idx = _scan(xp, xp.where(hit, pos, 0), dim, xp.maximum)
    idx_t = _const(idx.reshape(d.shape))
    spec = CUMMAX if is_max else CUMMIN
    values = spec.record(run.reshape(d.shape), (input,), (src.shape, dim, idx), self=input,
                         indices=idx_t)
    return (return_types.cummax if is_max else return_types.cummin)(values, idx_t)


@op(method="cummax", function="cummax", grad_fn="CummaxBackward0")
def cummax(input: Tensor, dim: int) -> Any:
    """The running maximum along dim and the index each value came from.

    Args:
        dim (int): the dim to scan along.

    Returns a named tuple (values, indices). Among equal values the index is the latest one; a
    NaN propagates. The gradient of each value goes to the entry at its index.

    Example::

        >>> rustgrad.tensor([1., 3., 2., 5.]).cummax(0)
        torch.return_types.cummax(
        values=tensor([1., 3., 3., 5.]),
        indices=tensor([0, 1, 1, 3]))
    """
    return _cum_extreme(input, dim, True)


@op(method="cummin", function="cummin", grad_fn="CumminBackward0")
def cummin(input: Tensor, dim: int) -> Any:
    """The running minimum along dim and the index each value came from.

    Args:
        dim (int): the dim to scan along.

    Returns a named tuple (values, indices), with cummax's rules for ties and NaN.

    Example::

        >>> rustgrad.tensor([4., 3., 5., 1.]).cummin(0)
        torch.return_types.cummin(
        values=tensor([4., 3., 3., 1.]),
        indices=tensor([0, 1, 1, 3]))
    """
    return _cum_extreme(input, dim, False)


def _rev_logcumsumexp(t: Tensor, dim: int) -> Tensor:
    return flip(logcumsumexp(flip(t, dim), dim), dim)


def _logcumsumexp_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    # grad_j = sum_{i >= j} g_i exp(x_j - out_i), summed in log space with g split into its
    # positive and negative parts, so that nothing overflows (as torch's formula)
    a, out = saved.self, saved.result
    if a._data.size == 0:
        return g
    if a._data.ndim == 0:
        return g
    # where out_i is -inf every x_j (j <= i) is -inf too and those terms are 0: a finite
    # stand-in keeps -inf - -inf (NaN) out of the sums, here and in double backward
    out = where(out == -math.inf, 0.0, out)

    def part_sum(part: Tensor) -> Optional[Tensor]:
        # sum_{i >= j} part_i exp(x_j - out_i) over the positive entries of part
        mask = part > 0
        if not bool(mask._data.any()):
            return None
        logs = where(mask, where(mask, part, 1.0).log(), -math.inf)
        return (_rev_logcumsumexp(logs - out, dim) + a).exp()

    up, down = part_sum(g), part_sum(-g)
    if up is None:
        return g * 0 if down is None else -down
    return up if down is None else up - down


LOGCUMSUMEXP = node("LogcumsumexpBackward0", _logcumsumexp_bw, saved=("self",), result=True,
                    getters={"dim": lambda s, c: c})


@op(method="logcumsumexp", function="logcumsumexp", grad_fn="LogcumsumexpBackward0")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along dim, computed stably.

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int): the dim to scan along.

    Example::

        >>> rustgrad.tensor([0., 0., 1000.]).logcumsumexp(0)
        tensor([0.0000e+00, 6.9315e-01, 1.0000e+03])
    """
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for \'{_float_name(d)}\'')
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    src = _src(d)
    work = src.astype(_F32) if _low_precision(src.dtype) else src
    with quiet_fp(xp):
        out = _scan(xp, work, dim, xp.logaddexp)
    return LOGCUMSUMEXP.record(out.reshape(d.shape).astype(d.dtype, copy=False), (input,), dim,
                               self=input)


def _inplace_scan(self: Tensor, fn: Any, dim: int, dtype: Any, reads_self: bool) -> Tensor:
    dt = self.dtype if dtype is None else dtype
    return inplace_from(self, lambda src: fn(src, dim, dtype=dt), reads_self)


@op(method="cumsum_", grad_fn="CumsumBackward0")
def cumsum_(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """In-place cumsum: self becomes its running sums along dim (in self's dtype).

    Args:
        self (Tensor): the tensor to write.
        dim (int): the dim to sum along.
        dtype (rustgrad.dtype, optional): keyword-only; the dtype to sum in (self's by default).

    Example::

        >>> x = rustgrad.tensor([1, 2, 3])
        >>> x.cumsum_(0)
        tensor([1, 3, 6])
    """
    return _inplace_scan(self, cumsum, dim, dtype, False)


@op(method="cumprod_", grad_fn="CumprodBackward0")
def cumprod_(self: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    """In-place cumprod: self becomes its running products along dim (in self's dtype).

    Args:
        self (Tensor): the tensor to write.
        dim (int): the dim to multiply along.
        dtype (rustgrad.dtype, optional): keyword-only; the dtype to multiply in (self's by
            default).

    Example::

        >>> x = rustgrad.tensor([1., 2., 3.])
        >>> x.cumprod_(0)
        tensor([1., 2., 6.])
    """
    return _inplace_scan(self, cumprod, dim, dtype, True)


# ---- aminmax, renorm -------------------------------------------------------------------------
def _aminmax_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    gmin, gmax = grads
    a = saved.self
    axes, kshape = ctx[:2]
    src = a if a._data.ndim else a.reshape(1)
    total = None
    for g, out in ((gmin, saved.min), (gmax, saved.max)):
        if g is None:
            continue
        mask = src == _kept(out, kshape)
        part = (_kept(g, kshape) / mask.sum(axes, keepdim=True)) * mask  # ties share evenly
        total = part if total is None else total + part
    return None if total is None else _back(total, a._data.shape)


AMINMAX = node("AminmaxBackward0", _aminmax_bw, saved=("self", "min", "max"),
               getters={"dim": lambda s, c: c[2], "keepdim": lambda s, c: c[3]})


@op(method="aminmax", function="aminmax", grad_fn="AminmaxBackward0")
def aminmax(input: Tensor, *, dim: Optional[int] = None, keepdim: bool = False) -> Any:
    """The smallest and the largest entries, overall or along dim, in one call.

    Args:
        dim (int, optional): keyword-only; the dim to reduce; all entries when None.
        keepdim (bool, optional): keyword-only; keep the reduced dim as size 1. Default: False.

    Returns a named tuple (min, max); as amin/amax, ties share the gradient evenly.

    Example::

        >>> rustgrad.aminmax(rustgrad.tensor([[1., 5.], [3., 0.]]), dim=1)
        torch.return_types.aminmax(
        min=tensor([1., 0.]),
        max=tensor([5., 3.]))
    """
    d = input._data
    src = _src(d)
    if dim is None:
        if src.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        axes = tuple(range(src.ndim))
    else:
        axes = (_wrap_dim(dim, d.ndim),)
        if src.shape[axes[0]] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {axes[0]} to have non-zero size.")
    shape = _out_shape(d.shape, axes, keepdim) if dim is not None else \
        ((1,) * d.ndim if keepdim else ())
    mn = _const(src.min(axis=axes, keepdims=True).reshape(shape))
    mx = _const(src.max(axis=axes, keepdims=True).reshape(shape))
    kshape = _keep_shape(d.shape, axes)
    outs = AMINMAX.record_multi((mn, mx), (input,), (axes, kshape, dim, keepdim), self=input,
                                min=mn, max=mx)
    return return_types.aminmax(*outs)


_RENORM_EPS = 1e-7  # torch adds it to the norm before dividing


def _renorm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a = saved.self
    p, axes, maxnorm, _ = ctx
    norm = vector_norm(a, p, axes, keepdim=True)
    over = norm > maxnorm
    factor = where(over, maxnorm / (norm + _RENORM_EPS), 1.0)
    # d factor / d norm is -maxnorm / (norm + eps)^2 where the slice is rescaled, else 0
    gnorm = (g * a).sum(axes, keepdim=True) * where(over, -maxnorm / (norm + _RENORM_EPS) ** 2, 0.0)
    gx = _norm_grad(gnorm, a, norm, p, axes)
    return g * factor if gx is None else g * factor + gx


RENORM = node("RenormBackward0", _renorm_bw, saved=("self",),
              getters={"p": lambda s, c: c[0], "dim": lambda s, c: c[3],
                       "maxnorm": lambda s, c: c[2]})


@op(method="renorm", function="renorm", grad_fn="RenormBackward0", autocast=dict(cuda="fp32"))
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """input with each slice along dim whose p-norm exceeds maxnorm scaled down to that norm.

    Args:
        input (Tensor): the input tensor (floating point, at least 2-d).
        p (float): the norm's order.
        dim (int): the dim whose slices (input.select(dim, i)) are normalized.
        maxnorm (float): the largest norm a slice keeps.

    Example::

        >>> rustgrad.tensor([[3., 4.], [0.3, 0.4]]).renorm(2, 0, 1.)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError("linalg.vector_norm: Expected a floating point or complex tensor "
                                  f"as input. Got {_float_name(d)}")
    pv = _p_value(p)
    if pv <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if d.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {d.ndim} dimensions")
    xp = input._backend
    dim = _wrap_dim(dim, d.ndim)
    axes = tuple(i for i in range(d.ndim) if i != dim)
    src = opmath(d)
    with quiet_fp(xp):
        norm = _norm_array(xp, src, pv, axes)
        factor = xp.where(norm > maxnorm, maxnorm / (norm + _RENORM_EPS), 1.0)
    out = (src * factor.astype(src.dtype, copy=False)).astype(d.dtype, copy=False)
    return RENORM.record(out, (input,), (pv, axes, float(maxnorm), dim), self=input)
