"""Normalization layers' ops: layer_norm, batch_norm, group_norm.

Each is one node, as torch's (NativeLayerNormBackward0, NativeBatchNormBackward0,
NativeGroupNormBackward0), whose formula recomputes the statistics in rustgrad ops, so double
backward works."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const, is_grad_enabled, needs_grad, same_devices


def _same_devices(*tensors: Optional[Tensor]) -> None:
    """torch's same-device error unless the given tensors (None skipped) share one device."""
    same_devices([t._data for t in tensors if t is not None])


def _norm_bw_x(g: Tensor, xhat: Tensor, rstd: Tensor, dims: Tuple[int, ...]) -> Tensor:
    """The input gradient of y = xhat (normalized over dims by batch statistics)."""
    return rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))


def _norm_bw_x_raw(gw: Tensor, x: Tensor, rstd: Tensor, mean: Tensor,
                   dims: Tuple[int, ...]) -> Tensor:
    """_norm_bw_x in terms of x itself: rstd * gw + b * x + c, with b and c from the sums of
    gw and gw * x (the same value; the same inf and nan as torch's kernels where a weight is
    infinite)."""
    n = 1
    for d in dims:
        n *= x._data.shape[d]
    ds = (gw * x).sum(dims, keepdim=True)
    db = gw.sum(dims, keepdim=True)
    b = (db * mean - ds) * (rstd * rstd * rstd) * (1.0 / n)
    c = -b * mean - db * rstd * (1.0 / n)
    return rstd * gw + b * x + c


def _stats(x: Tensor, dims: Tuple[int, ...], eps: float) -> Tuple[Tensor, Tensor, Tensor]:
    """(xhat, rstd, mean) recomputed in rustgrad ops, so that backward formulas are
    differentiable."""
    mean = x.mean(dims, keepdim=True)
    xc = x - mean
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).sqrt().reciprocal()
    return xc * rstd, rstd, mean


# ---- layer_norm ---------------------------------------------------------------------------
def _layer_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved.input, saved.weight
    dims, eps, needs, has_w, has_b, stats = ctx
    lead = tuple(range(x._data.ndim - len(dims)))
    fused = _fused_layer_norm_bw(g, x, w, dims, eps, needs, has_w, has_b, lead, stats)
    if fused is not None:
        return fused
    xhat, rstd, mean = _stats(x, dims, eps)
    gxhat = g * w if has_w else g
    out = [_norm_bw_x_raw(gxhat, x, rstd, mean, dims) if needs[0] else None]
    if has_w:
        out.append((g * xhat).sum(lead) if needs[1] and lead else (g * xhat) if needs[1]
                   else None)
    if has_b:
        out.append((g.sum(lead) if lead else g) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


LAYER_NORM = node("NativeLayerNormBackward0", _layer_norm_bw, saved=("input", "weight"))


def _rows(a: Any, dims: Tuple[int, ...]) -> Any:
    """a as (N, D): its normalized dims (the last ones) flattened into one."""
    d = math.prod(a.shape[a.ndim - len(dims):])
    return a.reshape(-1, d) if d else None


def _fused_layer_norm_bw(g: Tensor, x: Tensor, w: Optional[Tensor], dims: Tuple[int, ...],
                         eps: float, needs: Any, has_w: bool, has_b: bool,
                         lead: Tuple[int, ...], stats: Any = None) -> Any:
    """The gradients in one pass of the backend's kernel where no graph of them is recorded,
    else None (the formulas in rustgrad ops run); `stats`, the rows' (mean, rstd) the forward
    kernel kept, if it kept them."""
    kernels = g._backend.kernels
    kernel = kernels.layer_norm_backward_stats if stats is not None else None
    extra = (stats,) if kernel is not None else ()
    kernel = kernel or kernels.layer_norm_backward
    if kernel is None or is_grad_enabled():
        return None
    xd, gd = x._data, g._data
    x2, g2 = _rows(xd, dims), _rows(gd, dims)
    if x2 is None or g2 is None:
        return None
    res = kernel(g2, x2, w._data.reshape(-1) if has_w else None, eps, has_w and needs[1], *extra)
    if res is None:
        return None
    dx, xhat = res
    out = [const(dx.reshape(xd.shape)) if needs[0] else None]
    if has_w:
        gx = gd * xhat.reshape(xd.shape) if needs[1] else None
        out.append(None if gx is None else const(gx.sum(axis=lead) if lead else gx))
    if has_b:
        out.append(const(gd.sum(axis=lead) if lead else gd.copy()) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


def check_normalized_shape(shape: Tuple[int, ...], weight: Optional[Tensor],
                           bias: Optional[Tensor]) -> None:
    """torch's first checks of layer_norm and rms_norm: a normalized_shape of at least one dim,
    weight and bias of that shape."""
    if not shape:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of "
                f"shape {list(t.shape)} and normalized_shape = {list(shape)}"
            )


@op(function="layer_norm", functional="layer_norm", grad_fn="NativeLayerNormBackward0", autocast=dict(cuda="fp32"))
def layer_norm(input: Tensor, normalized_shape: Sequence[int], weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """input normalized over its last dims (normalized_shape), then scaled and shifted."""
    shape = ((normalized_shape,) if isinstance(normalized_shape, int)
             else tuple(normalized_shape))
    check_normalized_shape(shape, weight, bias)
    if len(shape) > input.ndim or tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape "
            f"[*, {', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}"
        )
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b)
    xp = x._backend
    dims = tuple(range(xd.ndim - len(shape), xd.ndim))
    needs = needs_grad(x, w, b)
    # the rows' statistics are kept for a backward when the backend's kernel gives them
    kernel = xp.kernels.layer_norm_stats if any(needs) and is_grad_enabled() else None
    kernel = kernel or xp.kernels.layer_norm
    x2 = None if kernel is None else _rows(xd, dims)
    out = None if x2 is None else kernel(
        x2, None if w is None else w._data.reshape(-1), None if b is None else b._data.reshape(-1),
        eps)
    stats = None
    if isinstance(out, tuple):
        out, stats = out
    if out is not None:
        out = out.reshape(xd.shape)
    else:
        mean = xd.mean(axis=dims, keepdims=True)
        xc = xd - mean
        var = (xc * xc).mean(axis=dims, keepdims=True)
        out = xc * (1 / xp.sqrt(var + eps))
        if w is not None:
            out = out * w._data
        if b is not None:
            out = out + b._data
    inputs = tuple(t for t in (x, w, b) if t is not None)
    ctx = (dims, eps, needs, w is not None, b is not None, stats)
    return LAYER_NORM.record(out.astype(xd.dtype, copy=False), inputs, ctx, input=x, weight=w)


# ---- batch_norm ---------------------------------------------------------------------------
def _batch_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w, rm, rv = saved.input, saved.weight, saved.running_mean, saved.running_var
    dims, eps, training, needs, has_w, has_b = ctx
    c = x._data.shape[1]
    bshape = (1, c) + (1,) * (x._data.ndim - 2)
    if training:
        xhat, rstd, _ = _stats(x, dims, eps)
    else:
        rstd = (rv.reshape(bshape) + eps).sqrt().reciprocal()
        xhat = (x - rm.reshape(bshape)) * rstd
    out: list = [None]
    if needs[0]:
        # the weight scales the result, not g (as torch's kernel: an infinite weight gives
        # +-inf, not inf - inf)
        scale = rstd * w.reshape(bshape) if has_w else rstd
        out[0] = _norm_bw_x(g, xhat, scale, dims) if training else g * scale
    if has_w:
        out.append((g * xhat).sum(dims) if needs[1] else None)
    if has_b:
        out.append(g.sum(dims) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


# the running statistics are saved in evaluation only (training reads the batch's)
BATCH_NORM = node("NativeBatchNormBackward0", _batch_norm_bw,
                  saved=("input", "weight", "running_mean", "running_var"))


def _verify_batch_size(sizes: Tuple[int, ...], shown: Any) -> None:
    """torch's refusal of a normalization with one value per channel (no variance): sizes[0]
    times the sizes past the channel dim."""
    if sizes[0] * math.prod(sizes[2:]) == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {shown}"
        )


def _check_batch_size(x: Tensor, rm: Optional[Tensor], rv: Optional[Tensor]) -> None:
    """torch's refusals of a training batch_norm's input before anything else: one value per
    channel (no variance), and only one of the running statistics given."""
    shape = tuple(x.shape)
    if not shape:
        raise IndexError("tuple index out of range")
    _verify_batch_size(shape, x.shape)
    if (rm is None) != (rv is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")


def _check_batch_norm(x: Tensor, rm: Optional[Tensor], rv: Optional[Tensor],
                      w: Optional[Tensor], b: Optional[Tensor], training: bool) -> None:
    """torch's refusals of batch_norm's (non-empty) arguments, in its order: running
    statistics missing in evaluation, a per-channel tensor of another size."""
    shape = tuple(x.shape)
    if not training:
        for name, t in (("running_mean", rm), ("running_var", rv)):
            if t is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
    c = shape[1] if len(shape) >= 2 else 0
    for name, t in (("running_mean", rm), ("running_var", rv), ("weight", w), ("bias", b)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    if len(shape) < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")


# torch.batch_norm takes (input, weight, bias, running_mean, running_var, ...): another order,
# so only the nn.functional name is declared
@op(functional="batch_norm", grad_fn="NativeBatchNormBackward0")
def batch_norm(input: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               weight: Optional[Tensor] = None, bias: Optional[Tensor] = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """input normalized per channel (dim 1), then scaled and shifted.

    In training by the batch statistics, updating the running statistics in place (unbiased
    variance); else by the running statistics."""
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b, running_mean, running_var)
    if training:
        _check_batch_size(input, running_mean, running_var)
    if xd.size == 0:
        # torch: no statistics to take or to update; a copy of the input (never a view, so
        # that the graph stays connected), scaled and shifted by the first channel's values
        out = x.clone()
        if w is not None:
            out = out * w.select(0, 0)
        if b is not None:
            out = out + b.select(0, 0)
        return out
    _check_batch_norm(input, running_mean, running_var, weight, bias, training)
    xp = x._backend
    c = xd.shape[1]
    dims = (0,) + tuple(range(2, xd.ndim))
    bshape = (1, c) + (1,) * (xd.ndim - 2)
    if training:
        n = xd.size // c
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
        invstd = 1 / xp.sqrt(var + eps)
    else:
        mean = running_mean._data.reshape(bshape)
        invstd = 1 / xp.sqrt(running_var._data.reshape(bshape) + eps)
    # x * alpha + beta per channel, as torch's kernel (an infinite weight gives nan where
    # inf * x - inf * mean does, as torch's)
    alpha = invstd * w._data.reshape(bshape) if w is not None else invstd
    beta = -mean * alpha
    if b is not None:
        beta = beta + b._data.reshape(bshape)
    out = xd * alpha + beta
    inputs = tuple(t for t in (x, w, b) if t is not None)
    # the running stats are saved as copies: they change in place at every training step
    ctx = (dims, eps, training, needs_grad(x, w, b), w is not None, b is not None)
    return BATCH_NORM.record(
        out.astype(xd.dtype, copy=False), inputs, ctx, input=x, weight=w,
        running_mean=None if training else const(running_mean._data.copy()),
        running_var=None if training else const(running_var._data.copy()))


# ---- group_norm ---------------------------------------------------------------------------
def _group_norm_bw_x(g: Tensor, x: Tensor, w: Optional[Tensor], rstd: Tensor,
                     groups: int) -> Tensor:
    """The input gradient of group_norm as rstd * w * g + b * x + c per channel, with b and c
    from the per-channel sums of g * x and g scaled by the weight, then summed per group (the
    same value as _norm_bw_x, and the same inf and nan as torch's kernel where a weight is
    infinite)."""
    shape = x._data.shape
    n, c = shape[0], shape[1]
    cpg = c // groups
    g3, x3 = g.reshape(n, c, -1), x.reshape(n, c, -1)
    ds_c, db_c = (g3 * x3).sum(2), g3.sum(2)  # (n, c)
    if w is not None:
        ds_c, db_c = ds_c * w, db_c * w
    ds = ds_c.reshape(n, groups, cpg).sum(2, keepdim=True)  # (n, groups, 1)
    db = db_c.reshape(n, groups, cpg).sum(2, keepdim=True)
    mean = x.reshape(n, groups, -1).mean(2, keepdim=True)
    inv_d = 1.0 / (cpg * x3._data.shape[2])
    b = (db * mean - ds) * (rstd * rstd * rstd) * inv_d
    cc = -b * mean - db * rstd * inv_d

    def per_channel(t: Tensor) -> Tensor:  # (n, groups, 1) -> (n, c, 1)
        return t.expand(n, groups, cpg).reshape(n, c, 1)

    scale = per_channel(rstd)
    if w is not None:
        scale = scale * w.reshape(1, c, 1)
    return (g3 * scale + per_channel(b) * x3 + per_channel(cc)).reshape(shape)


def _group_norm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved.input, saved.weight
    groups, eps, needs, has_w, has_b = ctx
    shape = x._data.shape
    n = shape[0]
    dims = (0,) + tuple(range(2, len(shape)))
    if n == 0:  # an empty batch: zero gradients of the parameters
        empty = [g * 0 if needs[0] else None]
        if has_w:
            empty.append(g.sum(dims) if needs[1] else None)
        if has_b:
            empty.append(g.sum(dims) if needs[2] else None)
        return tuple(empty) if len(empty) > 1 else empty[0]
    xhat_g, rstd, _ = _stats(x.reshape(n, groups, -1), (2,), eps)
    xhat = xhat_g.reshape(shape)
    out: list = [None]
    if needs[0]:
        out[0] = _group_norm_bw_x(g, x, w if has_w else None, rstd, groups)
    if has_w:
        out.append((g * xhat).sum(dims) if needs[1] else None)
    if has_b:
        out.append(g.sum(dims) if needs[2] else None)
    return tuple(out) if len(out) > 1 else out[0]


GROUP_NORM = node("NativeGroupNormBackward0", _group_norm_bw, saved=("input", "weight"))


def _check_group_norm(shape: Tuple[int, ...], groups: int, w: Optional[Tensor],
                      b: Optional[Tensor]) -> None:
    """torch's refusals of group_norm's arguments, in its order."""
    if len(shape) < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {len(shape)}"
        )
    if groups == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    n, c = shape[0], shape[1]
    sizes = [n * c // groups, groups] + list(shape[2:])
    _verify_batch_size(tuple(sizes), sizes)
    hw = math.prod(shape[2:])
    if c <= 0:
        raise RuntimeError(f"Expected number of channels to be greater than 0, got {c}")
    if hw <= 0:
        raise RuntimeError(f"Expected HxW to be greater than 0, got {hw}")
    if c % groups:
        raise RuntimeError(
            f"Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(shape)} and num_groups={groups}"
        )
    for name, t in (("weight", w), ("bias", b)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in "
                f"input, but got {name} of shape {list(t.shape)} and input of shape "
                f"{list(shape)}"
            )


@op(function="group_norm", functional="group_norm", grad_fn="NativeGroupNormBackward0", autocast=dict(cuda="fp32"))
def group_norm(input: Tensor, num_groups: int, weight: Optional[Tensor] = None,
               bias: Optional[Tensor] = None, eps: float = 1e-5) -> Tensor:
    """input normalized over each group of channels, then scaled and shifted per channel."""
    x, w, b = input, weight, bias
    xd = x._data
    _same_devices(x, w, b)
    _check_group_norm(xd.shape, num_groups, w, b)
    n, c = xd.shape[0], xd.shape[1]
    if xd.size == 0:  # an empty batch: nothing to normalize
        out = xd.copy()
        inputs = tuple(t for t in (x, w, b) if t is not None)
        ctx = (num_groups, eps, needs_grad(x, w, b), w is not None, b is not None)
        return GROUP_NORM.record(out, inputs, ctx, input=x, weight=w)
    xp = x._backend
    xg = xd.reshape(n, num_groups, -1)
    mean = xg.mean(axis=2, keepdims=True)
    xc = xg - mean
    rstd = 1 / xp.sqrt((xc * xc).mean(axis=2, keepdims=True) + eps)  # (n, groups, 1)
    # x * alpha + beta per (sample, channel), as torch's kernel (an infinite weight gives
    # nan where inf * x - inf * mean does, as torch's)
    cpg = c // num_groups
    alpha = xp.repeat(rstd.reshape(n, num_groups), cpg, axis=1)  # (n, c)
    beta = -xp.repeat(mean.reshape(n, num_groups), cpg, axis=1) * alpha
    if w is not None:
        alpha = alpha * w._data
        beta = beta * w._data
    if b is not None:
        beta = beta + b._data
    tail = (1,) * (xd.ndim - 2)
    out = xd * alpha.reshape((n, c) + tail) + beta.reshape((n, c) + tail)
    inputs = tuple(t for t in (x, w, b) if t is not None)
    ctx = (num_groups, eps, needs_grad(x, w, b), w is not None, b is not None)
    return GROUP_NORM.record(out.astype(xd.dtype, copy=False), inputs, ctx, input=x, weight=w)
