"""Activations: softmax and log_softmax (and the attention's safe softmax).

Forward on the input's arrays through `input._backend`; backward formulas in rustgrad ops, so
double backward works; grad_fn names and kernel names in errors as torch's."""

from __future__ import annotations

import math
import warnings
from typing import Any, Optional

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ._declare import op
from ._util import _type_name, record


def _errstate(xp: Any) -> Any:
    """Silences NumPy's floating-point warnings (torch computes inf/nan silently)."""
    es = getattr(xp, "errstate", None)
    if es is None:
        import contextlib

        return contextlib.nullcontext()
    return es(all="ignore")


# ---- softmax, log_softmax --------------------------------------------------------------
def _softmax_dim(ndim: int, name: str) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
        "dim=X as an argument.",
        UserWarning,
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _softmax_input(input: Tensor, dim: Any, dtype: Any, name: str) -> Any:
    if dtype is not None:
        input = input.to(dtype)
    d = input._data
    if d.dtype.kind != "f":
        last = d.ndim <= 1 or dim is not None and _wrap_dim(dim, d.ndim) == d.ndim - 1
        kernel = f"{name}_lastdim_kernel_impl" if last else "softmax_kernel_impl"
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{_type_name(_dtype.from_np(d.dtype))}\''
        )
    if dim is None:
        dim = _softmax_dim(d.ndim, name)
    return input, _wrap_dim(dim, d.ndim)


def _src(d: Any) -> Any:
    return d.reshape(1) if d.ndim == 0 else d


def _softmax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return (g - (g * out).sum(ctx, keepdim=True)) * out


@op(method="softmax", function="softmax", grad_fn="SoftmaxBackward0")
def softmax(input: Tensor, dim: Optional[int] = None, dtype: Any = None,
            _stacklevel: int = 3) -> Tensor:
    """exp(input) / exp(input).sum(dim), shifted by the max along dim."""
    input, dim = _softmax_input(input, dim, dtype, "softmax")
    xp = input._backend
    d = input._data
    src = _src(d)
    if src.size == 0:
        out = src.copy()
    else:
        with _errstate(xp):
            e = xp.exp(src - src.max(axis=dim, keepdims=True))
            out = e / e.sum(axis=dim, keepdims=True)
    return record(out.reshape(d.shape), (input,), "SoftmaxBackward0", _softmax_bw, (), dim, True)


def safe_softmax(input: Tensor, dim: int) -> Tensor:
    """torch's _safe_softmax (scaled_dot_product_attention): softmax, with rows whose entries
    are all -inf giving 0 instead of NaN, in value and gradient."""
    input, dim = _softmax_input(input, dim, None, "softmax")
    xd = input._data
    xp = input._backend
    mx = xd.max(axis=dim, keepdims=True)
    dead = mx == -math.inf
    with _errstate(xp):
        e = xp.exp(xd - xp.where(dead, 0, mx))
        s = e.sum(axis=dim, keepdims=True)
        out = xp.where(dead, 0, e / xp.where(dead, 1, s)).astype(xd.dtype, copy=False)
    return record(out, (input,), "SafeSoftmaxBackward0", _softmax_bw, (), dim, True)


def _log_softmax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g - out.exp() * g.sum(ctx, keepdim=True)


@op(method="log_softmax", function="log_softmax", grad_fn="LogSoftmaxBackward0")
def log_softmax(input: Tensor, dim: Optional[int] = None, dtype: Any = None,
                _stacklevel: int = 3) -> Tensor:
    """input - logsumexp(input, dim), shifted by the max along dim."""
    input, dim = _softmax_input(input, dim, dtype, "log_softmax")
    xp = input._backend
    d = input._data
    src = _src(d)
    if src.size == 0:
        out = src.copy()
    else:
        with _errstate(xp):
            shifted = src - src.max(axis=dim, keepdims=True)
            out = shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))
    return record(out.reshape(d.shape), (input,), "LogSoftmaxBackward0", _log_softmax_bw, (),
                  dim, True)
