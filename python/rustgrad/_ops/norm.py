"""Normalization layers' ops: layer_norm, batch_norm, group_norm.

Each is one node, as torch's (NativeLayerNormBackward0, NativeBatchNormBackward0,
NativeGroupNormBackward0), whose formula recomputes the statistics in rustgrad ops, so double
backward works."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .._tensor import Tensor
from ._declare import op
from ._util import const, needs_grad, record, same_devices


def _same_devices(*tensors: Optional[Tensor]) -> None:
    """torch's same-device error unless the given tensors (None skipped) share one device."""
    same_devices([t._data for t in tensors if t is not None])


def _norm_bw_x(g: Tensor, xhat: Tensor, rstd: Tensor, dims: Tuple[int, ...]) -> Tensor:
    """The input gradient of y = xhat (normalized over dims by batch statistics)."""
    return rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))


def _stats(x: Tensor, dims: Tuple[int, ...], eps: float) -> Tuple[Tensor, Tensor]:
    """(xhat, rstd) recomputed in rustgrad ops, so that backward formulas are differentiable."""
    xc = x - x.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).sqrt().reciprocal()
    return xc * rstd, rstd


# ---- layer_norm ---------------------------------------------------------------------------
def _layer_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved
    dims, eps, needs, has_w, has_b = ctx
    xhat, rstd = _stats(x, dims, eps)
    lead = tuple(range(x._data.ndim - len(dims)))
    gxhat = g * w if has_w else g
    out = [_norm_bw_x(gxhat, xhat, rstd, dims) if needs[0] else None]
    if has_w:
        out.append((g * xhat).sum(lead) if needs[1] and lead else (g * xhat) if needs[1]
                   else None)
    if has_b:
        out.append((g.sum(lead) if lead else g) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


@op(function="layer_norm", functional="layer_norm", grad_fn="NativeLayerNormBackward0")
def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """input normalized over its last dims (normalized_shape), then scaled and shifted."""
    shape = ((normalized_shape,) if isinstance(normalized_shape, int)
             else tuple(normalized_shape))
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b)
    xp = x._backend
    dims = tuple(range(xd.ndim - len(shape), xd.ndim))
    mean = xd.mean(axis=dims, keepdims=True)
    xc = xd - mean
    var = (xc * xc).mean(axis=dims, keepdims=True)
    out = xc * (1 / xp.sqrt(var + eps))
    if w is not None:
        out = out * w._data
    if b is not None:
        out = out + b._data
    inputs = tuple(t for t in (x, w, b) if t is not None)
    ctx = (dims, eps, needs_grad(x, w, b), w is not None, b is not None)
    return record(out.astype(xd.dtype, copy=False), inputs, "NativeLayerNormBackward0",
                  _layer_norm_bw, (x, w), ctx)


# ---- batch_norm ---------------------------------------------------------------------------
def _batch_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w, rm, rv = saved
    dims, eps, training, needs, has_w, has_b = ctx
    c = x._data.shape[1]
    bshape = (1, c) + (1,) * (x._data.ndim - 2)
    if training:
        xhat, rstd = _stats(x, dims, eps)
    else:
        rstd = (rv.reshape(bshape) + eps).sqrt().reciprocal()
        xhat = (x - rm.reshape(bshape)) * rstd
    gxhat = g * w.reshape(bshape) if has_w else g
    out: list = [None]
    if needs[0]:
        out[0] = _norm_bw_x(gxhat, xhat, rstd, dims) if training else gxhat * rstd
    if has_w:
        out.append((g * xhat).sum(dims) if needs[1] else None)
    if has_b:
        out.append(g.sum(dims) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


# torch.batch_norm takes (input, weight, bias, running_mean, running_var, ...): another order,
# so only the nn.functional name is declared
@op(functional="batch_norm", grad_fn="NativeBatchNormBackward0")
def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """input normalized per channel (dim 1), then scaled and shifted.

    In training by the batch statistics, updating the running statistics in place (unbiased
    variance); else by the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm expects at least 2-D input, got {input.ndim}-D")
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b, running_mean, running_var)
    xp = x._backend
    c = xd.shape[1]
    dims = (0,) + tuple(range(2, xd.ndim))
    bshape = (1, c) + (1,) * (xd.ndim - 2)
    if training:
        n = xd.size // c
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{x.shape}"
            )
        mean = xd.mean(axis=dims, keepdims=True)
        xc = xd - mean
        var = (xc * xc).mean(axis=dims, keepdims=True)
        if running_mean is not None:
            r = running_mean._data
            r[...] = momentum * mean.reshape(c) + (1 - momentum) * r
            running_mean._bump_version()
        if running_var is not None:
            r = running_var._data
            r[...] = momentum * var.reshape(c) * (n / (n - 1)) + (1 - momentum) * r
            running_var._bump_version()
        out = xc * (1 / xp.sqrt(var + eps))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        out = (xd - running_mean._data.reshape(bshape)) * \
            (1 / xp.sqrt(running_var._data.reshape(bshape) + eps))
    if w is not None:
        out = out * w._data.reshape(bshape)
    if b is not None:
        out = out + b._data.reshape(bshape)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    # the running stats are saved as copies: they change in place at every training step
    saved = (x, w, None if training else const(running_mean._data.copy()),
             None if training else const(running_var._data.copy()))
    ctx = (dims, eps, training, needs_grad(x, w, b), w is not None, b is not None)
    return record(out.astype(xd.dtype, copy=False), inputs, "NativeBatchNormBackward0",
                  _batch_norm_bw, saved, ctx)


# ---- group_norm ---------------------------------------------------------------------------
def _group_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved
    groups, eps, needs, has_w, has_b = ctx
    shape = x._data.shape
    n, c = shape[0], shape[1]
    bshape = (1, c) + (1,) * (len(shape) - 2)
    dims = (0,) + tuple(range(2, len(shape)))
    xhat_g, rstd = _stats(x.reshape(n, groups, -1), (2,), eps)
    xhat = xhat_g.reshape(shape)
    gxhat = g * w.reshape(bshape) if has_w else g
    out: list = [None]
    if needs[0]:
        out[0] = _norm_bw_x(gxhat.reshape(n, groups, -1), xhat_g, rstd, (2,)).reshape(shape)
    if has_w:
        out.append((g * xhat).sum(dims) if needs[1] else None)
    if has_b:
        out.append(g.sum(dims) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


@op(function="group_norm", functional="group_norm", grad_fn="NativeGroupNormBackward0")
def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """input normalized over each group of channels, then scaled and shifted per channel."""
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b)
    n, c = xd.shape[0], xd.shape[1]
    if c % num_groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {input.shape} and num_groups={num_groups}"
        )
    xp = x._backend
    xg = xd.reshape(n, num_groups, -1)
    xc = xg - xg.mean(axis=2, keepdims=True)
    var = (xc * xc).mean(axis=2, keepdims=True)
    out = (xc * (1 / xp.sqrt(var + eps))).reshape(xd.shape)
    bshape = (1, c) + (1,) * (xd.ndim - 2)
    if w is not None:
        out = out * w._data.reshape(bshape)
    if b is not None:
        out = out + b._data.reshape(bshape)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    ctx = (num_groups, eps, needs_grad(x, w, b), w is not None, b is not None)
    return record(out.astype(xd.dtype, copy=False), inputs, "NativeGroupNormBackward0",
                  _group_norm_bw, (x, w), ctx)
