"""Losses with a node of their own: nll_loss, mse_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy, binary_cross_entropy_with_logits; the reduction-argument helpers the
composite losses of nn.functional share.

Forward on the device's arrays (through `input._backend`); backward formulas in rustgrad ops,
so double backward works; grad_fn names as torch's."""

from __future__ import annotations

import warnings
from typing import Any, Optional, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    NOT_IMPLEMENTED,
    broadcast_error,
    capturing,
    check_broadcastable,
    const,
    is_grad_enabled,
    needs_grad,
    quiet_fp,
    same_device,
    same_devices,
    sum_to,
)
from .activation import stable_softplus
from .distance import pairwise_distance
from .indexing import index_into_zeros

_REDUCTIONS = ("none", "mean", "sum", "batchmean")






# ---- reduction arguments ------------------------------------------------------------------
def legacy_reduction(size_average: Optional[bool], reduce: Optional[bool],
                     reduction: str) -> str:
    """The reduction string, from torch's deprecated size_average/reduce when either is given
    (torch's _Reduction.legacy_get_string, with its warning)."""
    if size_average is None and reduce is None:
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def apply_reduction(loss: Tensor, reduction: str) -> Tensor:
    """loss reduced as `reduction` says (for losses composed of rustgrad ops)."""
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def check_target_size(input: Tensor, target: Tensor) -> None:
    """torch's warning when input and target shapes differ (they broadcast, likely by
    mistake), and its error when they do not broadcast."""
    same_device(input._data, target._data)
    a, b = input._data.shape, target._data.shape
    if a == b:
        return
    warnings.warn(
        f"Using a target size ({target.shape}) that is different to the input size "
        f"({input.shape}). This will likely lead to incorrect results due to broadcasting. "
        "Please ensure they have the same size.", UserWarning, stacklevel=3)
    ok = ValueError()
    err = broadcast_error(ok, a, b)
    if err is not ok:
        raise err


def check_weight_size(input: Tensor, weight: Tensor) -> None:
    """torch's refusal of an elementwise loss's weight of another shape than the input's."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def weighted_reduction(loss: Tensor, weight: Tensor, reduction: str) -> Tensor:
    """mse_loss's and l1_loss's weighted losses reduced as torch's: "mean" is the weighted
    mean, sum(weight * loss) / sum(weight)."""
    if reduction == "mean":
        return loss.sum() / weight.sum()
    return apply_reduction(loss, reduction)


def _reduce_array(xp: Any, a: Any, reduction: str) -> Any:
    if reduction == "none":
        return a
    if reduction == "sum":
        return xp.asarray(a.sum(), dtype=a.dtype)
    if reduction == "mean":
        return xp.asarray(a.mean(), dtype=a.dtype)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce_grad(g: Tensor, local: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return local * (g / local._data.size)
    return local * g


def _pair_grads(gl: Tensor, saved: Any, reduction: str, needs: Any) -> Any:
    """The gradients of input and target from the loss's gradient gl at their broadcast shape.
    A reduced loss is a scalar, not of that shape, so the engine cannot tell that an input of
    the scalar's shape was broadcast: the sum back to each input's shape is done here."""
    a, b = saved.self, saved.target
    ga = gl if needs[0] else None
    gb = -gl if needs[1] else None
    if reduction != "none":
        ga = None if ga is None else sum_to(ga, a._data.shape)
        gb = None if gb is None else sum_to(gb, b._data.shape)
    return ga, gb


# ---- nll_loss -----------------------------------------------------------------------------
def _nll_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape2, idx, coef, reduction, perm, shape_nd = ctx
    m = coef.shape[0]
    gm = g.reshape(m) if reduction == "none" else g.reshape(1).expand(m)
    gx = index_into_zeros(gm * const(coef), shape2, idx, False)
    if perm is None:
        return gx.reshape(shape_nd) if gx._data.shape != shape_nd else gx
    moved = tuple(shape_nd[i] for i in perm)
    inv = [0] * len(perm)
    for i, q in enumerate(perm):
        inv[q] = i
    return gx.reshape(moved).permute(inv)


def _nll_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    # the loss is linear in its input: the tangent is the loss of the input's tangent
    shape2, (rows, cols), coef, reduction, perm, shape_nd = ctx
    t = tangents[0]
    if perm is not None:
        t = t.permute(perm)
    picked = t.reshape(shape2)[rows, cols] * const(coef)
    if reduction != "none":
        return picked.sum()
    return picked.reshape(shape_nd[:1] + shape_nd[2:] if len(shape_nd) > 1 else ())


NLL_LOSS = node("NllLossBackward0", _nll_bw, forward=_nll_fw)
NLL_LOSS_2D = node("NllLoss2DBackward0", _nll_bw, forward=_nll_fw)


_INT64 = _dtype.int64.np


def _nll_every_target(xp: Any, x2: Any, t1: Any, c: int, ignore_index: int, reduction: str
                      ) -> Optional[Tuple[Any, Any, Any]]:
    """(loss, rows, coef) of an unweighted mean or sum whose targets are all in range and none
    ignored (a training step's loss), in a few array ops instead of the masks the general
    formulation builds; the same values (the weights are all 1, so the divisor is n), or None
    when some target is out of range or ignored (the general formulation reports or masks
    it). Host reads of the targets: not under CUDA graph capture."""
    if capturing(xp) or not t1.size:
        return None
    lo, hi = t1.min(), t1.max()
    if lo < 0 or hi >= c or (lo <= ignore_index <= hi and bool((t1 == ignore_index).any())):
        return None
    n = t1.shape[0]
    rows = xp.arange(n)
    dtype = x2.dtype
    total = -x2[rows, t1].sum()  # -sum(x) is sum(-x): the general formulation's bits
    if reduction == "sum":
        return xp.asarray(total, dtype=dtype), rows, xp.full(n, -1, dtype=dtype)
    n_ = dtype.type(n)
    with quiet_fp(xp):
        return (xp.asarray(total / n_, dtype=dtype), rows,
                xp.full(n, dtype.type(-1) / n_, dtype=dtype))


@op(functional="nll_loss", grad_fn=("NllLossBackward0", "NllLoss2DBackward0"), autocast=dict(cuda="fp32", cpu="fp32"))
def nll_loss(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
             size_average: Optional[bool] = None, ignore_index: int = -100,
             reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class-index targets, given log-probabilities.

    Args:
        input (Tensor): log-probabilities (N, C) or (N, C, d1, ...), or (C,) for one sample.
        target (Tensor): int64 class indices (N) or (N, d1, ...).
        weight (Tensor, optional): a weight per class (C,).
        ignore_index (int, optional): a target value that contributes nothing (nor to the
            mean's divisor). Default: -100.

    With weights, "mean" divides by the sum of the weights of the targets used.

    Example::

        >>> logp = rustgrad.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]).log()
        >>> rustgrad.nn.functional.nll_loss(logp, rustgrad.tensor([0, 2]))
        tensor(0.4581)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    xd, td = input._data, target._data
    same_devices((xd, td) if weight is None else (xd, td, weight._data))
    xp = input._backend
    if xd.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    if td.dtype != _dtype.uint8.np and td.dtype != _dtype.int64.np:
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got "
            f"{_dtype.scalar_type_name(target.dtype)}"
        )
    if td.dtype == _dtype.uint8.np and xd.ndim > 2:  # torch's 2-d kernel takes Long only
        raise RuntimeError("expected scalar type Long but found Byte")
    if xd.ndim == 1:
        if td.ndim != 0:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size "
                             f"({td.shape[0] if td.ndim else 1}).")
        c = xd.shape[0]
        x2 = xd.reshape(1, c)
        t1 = td.reshape(1)
        perm = None
        out_shape: Tuple[int, ...] = ()
    else:
        if xd.shape[0] != td.shape[0] if td.ndim else True:
            raise ValueError(
                f"Expected input batch_size ({xd.shape[0]}) to match target batch_size "
                f"({td.shape[0] if td.ndim else 0})."
            )
        c = xd.shape[1]
        if xd.ndim == 2:
            x2, t1, perm = xd, td, None
        else:
            if td.shape != xd.shape[:1] + xd.shape[2:]:
                raise RuntimeError(
                    f"Expected target size {list(xd.shape[:1] + xd.shape[2:])}, got "
                    f"{list(td.shape)}"
                )
            perm = (0,) + tuple(range(2, xd.ndim)) + (1,)
            x2 = xd.transpose(perm).reshape(-1, c)
            t1 = td.reshape(-1)
        out_shape = td.shape
    if (weight is None and perm is None and reduction != "none" and t1.dtype == _INT64
            and x2.dtype.kind == "f" and x2.dtype.itemsize >= 4):
        fast = _nll_every_target(xp, x2, t1, c, ignore_index, reduction)
        if fast is not None:
            out, rows, coef = fast
            ctx = (x2.shape, (rows, t1), coef, reduction, perm, xd.shape)
            return NLL_LOSS.record(out, (input,), ctx)
    valid = t1 != ignore_index
    # the bounds check reads the targets on the host: not inside a CUDA graph capture, where
    # an out-of-range target wraps around instead (torch's kernel asserts on the device)
    if not capturing(xp) and bool(((t1 < 0) | (t1 >= c))[valid].any()):
        bad = t1[valid & ((t1 < 0) | (t1 >= c))][0]
        raise IndexError(f"Target {int(bad)} is out of bounds.")
    tsafe = xp.where(valid, t1, 0)
    rows = xp.arange(x2.shape[0])
    picked = x2[rows, tsafe]
    w = weight._data[tsafe] if weight is not None else xp.ones(t1.shape, dtype=xd.dtype)
    w = xp.where(valid, w, 0).astype(xd.dtype, copy=False)
    # an ignored entry contributes an exact 0 (not -0, nor nan from an inf or nan input) and
    # receives a zero gradient, even where every target is ignored and the mean is 0/0
    with quiet_fp(xp):
        losses = xp.where(valid, -picked * w, 0).astype(xd.dtype, copy=False)
    coef = xp.where(valid, -w, 0).astype(xd.dtype, copy=False)
    if reduction == "none":
        out = losses.reshape(out_shape)
    elif reduction == "sum":
        out = xp.asarray(losses.sum(), dtype=xd.dtype)
    elif reduction == "mean":
        total = w.sum()
        with quiet_fp(xp):
            out = xp.asarray(losses.sum() / total, dtype=xd.dtype)  # nan if all ignored
            coef = xp.where(valid, coef / total, 0).astype(xd.dtype, copy=False)
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    ctx = (x2.shape, (rows, tsafe), coef, reduction, perm, xd.shape)
    return (NLL_LOSS_2D if xd.ndim == 4 else NLL_LOSS).record(out, (input,), ctx)


# ---- mse, smooth l1, huber ----------------------------------------------------------------
def _mse_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    reduction, needs = ctx
    local = (saved.self - saved.target) * 2
    return _pair_grads(_reduce_grad(g, local, reduction), saved, reduction, needs)


def _mse_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    (ts, tt), reduction = tangents, ctx[0]
    dx = ts if tt is None else (-tt if ts is None else ts - tt)
    local = (saved.self - saved.target) * 2 * dx
    return local.mean() if reduction == "mean" else local.sum() if reduction == "sum" else local


MSE_LOSS = node("MseLossBackward0", _mse_bw, saved=("self", "target"), forward=_mse_fw)


@op(functional="mse_loss", grad_fn="MseLossBackward0", autocast=dict(cuda="fp32", cpu="fp32"))
def mse_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
             reduce: Optional[bool] = None, reduction: str = "mean",
             weight: Optional[Tensor] = None) -> Tensor:
    """The (weighted) squared error (input - target)^2, reduced.

    Args:
        input (Tensor): the predictions.
        target (Tensor): the targets, of input's shape.
        weight (Tensor, optional): a weight per entry, of input's shape; "mean" is then the
            weighted mean, divided by the sum of the weights.

    Example::

        >>> rustgrad.nn.functional.mse_loss(rustgrad.tensor([1., 2.]), rustgrad.tensor([0., 4.]))
        tensor(2.5000)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        check_weight_size(input, weight)
        check_target_size(input, target)
        d = input - target
        return weighted_reduction(d * d * weight, weight, reduction)
    a, b = input, target
    check_target_size(a, b)
    d = a._data - b._data
    out = _reduce_array(a._backend, d * d, reduction)
    return MSE_LOSS.record(out, (a, b), (reduction, needs_grad(a, b)), self=a, target=b)


def _smooth_l1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    reduction, beta, huber, needs = ctx
    diff = saved.self - saved.target
    if beta == 0:
        local = diff.sign()
    elif huber:
        local = diff.clamp(-beta, beta)
    else:
        local = diff.clamp(-beta, beta) / beta
    return _pair_grads(_reduce_grad(g, local, reduction), saved, reduction, needs)


SMOOTH_L1_LOSS = node("SmoothL1LossBackward0", _smooth_l1_bw, saved=("self", "target"))
HUBER_LOSS = node("HuberLossBackward0", _smooth_l1_bw, saved=("self", "target"))


def _smooth_l1(a: Tensor, b: Tensor, reduction: str, beta: float, huber: bool) -> Tensor:
    """smooth_l1 (quadratic below beta, scaled by 1/beta) or huber (quadratic below delta)."""
    check_target_size(a, b)
    xp = a._backend
    d = a._data - b._data
    ad = xp.abs(d)
    if huber:
        loss = xp.where(ad < beta, 0.5 * d * d, beta * (ad - 0.5 * beta))
    elif beta == 0:
        loss = ad
    else:
        loss = xp.where(ad < beta, 0.5 * d * d / beta, ad - 0.5 * beta)
    loss = loss.astype(d.dtype, copy=False)
    out = _reduce_array(xp, loss, reduction)
    spec = HUBER_LOSS if huber else SMOOTH_L1_LOSS
    return spec.record(out, (a, b), (reduction, beta, huber, needs_grad(a, b)), self=a, target=b)


@op(functional="smooth_l1_loss", grad_fn="SmoothL1LossBackward0", autocast=dict(cuda="fp32", cpu="fp32"))
def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                   reduce: Optional[bool] = None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target), reduced.

    Args:
        input (Tensor): the predictions.
        target (Tensor): the targets, of input's shape.
        beta (float, optional): where the loss turns from quadratic to linear. Default: 1.

    Example::

        >>> F = rustgrad.nn.functional
        >>> F.smooth_l1_loss(rustgrad.tensor([0.5, 3.]), rustgrad.tensor([0., 0.]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _smooth_l1(input, target, legacy_reduction(size_average, reduce, reduction), beta,
                      False)


@op(functional="huber_loss", grad_fn="HuberLossBackward0", autocast=dict(cuda="fp32", cpu="fp32"))
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Optional[Tensor] = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta) (d = input - target), reduced."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None:
        check_weight_size(input, weight)
        return apply_reduction(_smooth_l1(input, target, "none", delta, True) * weight,
                               reduction)
    return _smooth_l1(input, target, legacy_reduction(None, None, reduction), delta, True)


# ---- binary cross entropy -----------------------------------------------------------------
def _check_expands_to(w: Tensor, x: Tensor) -> None:
    """torch's refusal of a weight that does not expand to the input's shape (binary
    cross entropy expands it first)."""
    ws, xs = tuple(w.shape), tuple(x.shape)
    for i in range(1, len(ws) + 1):
        n = xs[-i] if i <= len(xs) else 1
        if ws[-i] != 1 and ws[-i] != n and n != 1:
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {ws[-i]} at -{i}! Mismatching "
                f"argument at index 1 had {w.shape}; but expected shape should be broadcastable "
                f"to {list(xs)}"
            )


def _check_broadcast_fits(xs: Tuple[int, ...], ws: Tuple[int, ...]) -> None:
    """torch's errors where a tensor of shape ws, combined with the input (shape xs) into a
    result of the input's shape, does not broadcast with it or would enlarge it."""
    check_broadcastable(xs, ws)
    n = max(len(xs), len(ws))
    a = (1,) * (n - len(xs)) + xs
    b = (1,) * (n - len(ws)) + ws
    out = tuple(max(p, q) if min(p, q) != 0 else 0 for p, q in zip(a, b))
    if out != xs:
        raise RuntimeError(
            f"output with shape {list(xs)} doesn't match the broadcast shape {list(out)}"
        )


def _bce_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, t, w = saved.self, saved.target, saved.weight
    reduction, has_w, needs_t = ctx
    local = (x - t) / ((1 - x) * x).clamp(min=1e-12)
    if has_w:
        local = local * w
    gx = _reduce_grad(g, local, reduction)
    gt = None
    if needs_t:
        # d/dt: log(1 - x) - log(x), not clamped (inf at x == 0, -inf at x == 1), as torch's
        local_t = (-x).log1p() - x.log()
        if has_w:
            local_t = local_t * w
        gt = _reduce_grad(g, local_t, reduction)
    return (gx, gt, None) if has_w else (gx, gt)


BCE = node("BinaryCrossEntropyBackward0", _bce_bw, saved=("self", "target", "weight"))


@op(functional="binary_cross_entropy", grad_fn="BinaryCrossEntropyBackward0", autocast=dict(cuda="banned", cpu="fp32"))
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Optional[Tensor] = None,
                         size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log(x) + (1 - t) log(1 - x)) of probabilities x, logs clamped at -100, reduced.

    Args:
        input (Tensor): probabilities in [0, 1].
        target (Tensor): targets in [0, 1], of input's shape.
        weight (Tensor, optional): a weight per entry, broadcast with input.

    Example::

        >>> rustgrad.nn.functional.binary_cross_entropy(rustgrad.tensor([0.5, 0.9]), rustgrad.tensor([1., 1.]))
        tensor(0.3993)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = input, target
    if x._data.shape != t._data.shape:
        raise ValueError(
            f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) "
            "is deprecated. Please ensure they have the same size."
        )
    if weight is not None and weight.shape != x.shape:
        _check_expands_to(weight, x)
    xd, td = x._data, t._data
    same_devices((xd, td) if weight is None else (xd, td, weight._data))
    # nan is out of range too; one device-to-host read for both, which one only on failure
    inside = ((xd >= 0) & (xd <= 1)).all() & ((td >= 0) & (td <= 1)).all()
    if not bool(inside):
        bad = "input" if not bool(((xd >= 0) & (xd <= 1)).all()) else "target"
        raise RuntimeError(f"all elements of {bad} should be between 0 and 1")
    if weight is not None and weight.shape != x.shape:
        _check_broadcast_fits(tuple(x.shape), tuple(weight.shape))
        weight = weight.expand(x.shape)
    xp = x._backend
    with quiet_fp(xp):
        logx = xp.maximum(xp.log(xd), -100)
        log1mx = xp.maximum(xp.log(1 - xd), -100)
    loss = (td - 1) * log1mx - td * logx
    if weight is not None:
        loss = loss * weight._data
    loss = loss.astype(xd.dtype, copy=False)
    out = _reduce_array(xp, loss, reduction)
    inputs = (x, t) if weight is None else (x, t, weight)
    return BCE.record(out, inputs, (reduction, weight is not None, t.requires_grad), self=x,
                      target=t, weight=weight)


def _bce_logits_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # every term is of the input's shape (weight and pos_weight broadcast to it, checked)
    x, t, w, pw = saved.self, saved.target, saved.weight, saved.pos_weight
    reduction, has_w, has_pw, nx, nt = ctx
    gx = gt = None
    if nx:
        if has_pw:
            tp = pw * t
            local = (tp + 1 - t) * x.sigmoid() - tp
        else:
            local = x.sigmoid() - t
        if has_w:
            local = local * w
        gx = _reduce_grad(g, local, reduction)
    if nt:
        sp = stable_softplus(-x)
        local = (pw - 1) * sp - x if has_pw else -x
        if has_w:
            local = local * w
        gt = _reduce_grad(g, local, reduction)
    out = [gx, gt]
    if has_w:
        out.append(None)
    if has_pw:
        out.append(None)
    return tuple(out)


BCE_WITH_LOGITS = node("BinaryCrossEntropyWithLogitsBackward0", _bce_logits_bw,
                       saved=("self", "target", "weight", "pos_weight"))


# torch.binary_cross_entropy_with_logits takes (input, target, weight, pos_weight, reduction):
# another order, so only the nn.functional name is declared
@op(functional="binary_cross_entropy_with_logits",
    grad_fn="BinaryCrossEntropyWithLogitsBackward0", autocast=dict(cuda="fp32", cpu="fp32"))
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Optional[Tensor] = None,
                                     size_average: Optional[bool] = None,
                                     reduce: Optional[bool] = None, reduction: str = "mean",
                                     pos_weight: Optional[Tensor] = None) -> Tensor:
    """binary_cross_entropy of sigmoid(input), computed stably from the logits, reduced.

    Args:
        input (Tensor): logits.
        target (Tensor): targets in [0, 1], of input's shape.
        weight (Tensor, optional): a weight per entry, broadcast with input.
        pos_weight (Tensor, optional): a weight for the positive term, per class (last dim).

    Example::

        >>> F = rustgrad.nn.functional
        >>> F.binary_cross_entropy_with_logits(rustgrad.tensor([0., 100.]), rustgrad.tensor([1., 1.]))
        tensor(0.3466)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t = input, target
    if x._data.shape != t._data.shape:
        raise ValueError(
            f"Target size ({t.shape}) must be the same as input size ({x.shape})"
        )
    xp = x._backend
    xd, td = x._data, t._data
    same_devices([xd, td] + [w._data for w in (weight, pos_weight) if w is not None])
    for w in (pos_weight, weight):
        if w is not None:
            _check_broadcast_fits(tuple(xd.shape), tuple(w._data.shape))
    # (1 - t) * x + lw * softplus(-x), softplus(-x) = max(-x, 0) + log(1 + exp(-|x|))
    sp = xp.maximum(-xd, 0) + xp.log1p(xp.exp(-xp.abs(xd)))
    if pos_weight is not None:
        lw = (pos_weight._data - 1) * td + 1
        loss = (1 - td) * xd + lw * sp
    else:
        loss = (1 - td) * xd + sp
    if weight is not None:
        loss = loss * weight._data
    loss = loss.astype(xd.dtype, copy=False)
    out = _reduce_array(xp, loss, reduction)
    inputs = [x, t]
    if weight is not None:
        inputs.append(weight)
    if pos_weight is not None:
        inputs.append(pos_weight)
    ctx = (reduction, weight is not None, pos_weight is not None, x.requires_grad,
           t.requires_grad)
    return BCE_WITH_LOGITS.record(out, tuple(inputs), ctx, self=x, target=t, weight=weight,
                                  pos_weight=pos_weight)


# ---- multi_margin_loss, multilabel_margin_loss ---------------------------------------------
def _per_sample_grad(g: Tensor, n: int, reduction: str) -> Tensor:
    """The loss's gradient as one entry per sample, (N, 1): a reduced loss hands each sample
    g (or g / N for the mean)."""
    if reduction == "none":
        return g.reshape(n, 1)
    gs = g / n if reduction == "mean" else g
    return gs.reshape(1, 1).expand(n, 1)


def _multi_margin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    p, margin, reduction, coef, mask = ctx
    x = saved.self
    n, c = mask.shape
    x2 = x.reshape(n, c)
    t = saved.target.reshape(n, 1)
    # each active class's hinge: margin - x[y] + x[i]; its derivative (p = 2: twice itself)
    d = const(mask.astype(x._data.dtype))
    if p == 2:
        d = d * (margin - x2.gather(1, t) + x2) * 2
    d = d * (_per_sample_grad(g, n, reduction) * const(coef.reshape(n, 1)))
    onehot = const((x._backend.arange(c).reshape(1, c) == t._data).astype(x._data.dtype))
    gx = (d - onehot * d.sum(1, keepdim=True)).reshape(x._data.shape)
    return _first_order_only(gx, g, x, "multi_margin_loss_backward")


def _first_order_only(gx: Tensor, g: Tensor, x: Tensor, name: str) -> Tensor:
    """gx, recorded under create_graph as torch's node for a backward without a derivative:
    differentiating it again is torch's "derivative for aten::<name> is not implemented"."""
    if not is_grad_enabled():
        return gx
    return NOT_IMPLEMENTED.record(gx._data, (g, x), name)


MULTI_MARGIN = node("MultiMarginLossBackward0", _multi_margin_bw, saved=("self", "target"),
                    getters={"p": lambda s, c: c[0], "margin": lambda s, c: c[1],
                             "reduction": lambda s, c: _REDUCTION_ENUM[c[2]]})
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _margin_input(xd: Any) -> Tuple[int, int]:
    """(samples, classes) of a margin loss's (C,) or (N, C) input; torch's refusal of others."""
    if xd.ndim <= 1:
        return 1, (xd.size if xd.ndim else 1)
    if xd.ndim == 2 and xd.shape[1] != 0:
        return xd.shape[0], xd.shape[1]
    raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but "
                       f"got: {list(xd.shape)}")


@op(functional="multi_margin_loss", grad_fn="MultiMarginLossBackward0",
    autocast=dict(cuda="fp32", cpu="fp32"))
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                      reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: per sample, the sum over the other classes i of
    max(0, margin - input[y] + input[i])^p, divided by the number of classes.

    Args:
        input (Tensor): the scores, (N, C) or (C,).
        target (Tensor): int64 class indices, (N,) (or one for a (C,) input).
        p (int, optional): 1 or 2. Default: 1.
        margin (float, optional): the margin. Default: 1.
        weight (Tensor, optional): a weight per class (C,), applied by each sample's target.
        reduction (str, optional): "none", "mean" or "sum" over the samples. Default: "mean".

    Example::

        >>> x = rustgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> rustgrad.nn.functional.multi_margin_loss(x, rustgrad.tensor([3]))
        tensor(0.3250)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    xd, td = input._data, target._data
    same_devices((xd, td) if weight is None else (xd, td, weight._data))
    n, c = _margin_input(xd)
    if td.ndim > 1 or td.size != n:
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
            f"input samples (batch size). Expected target size [{n}], but got "
            f"{list(td.shape)}. Input has shape {list(xd.shape)}.")
    if td.dtype != _dtype.int64.np:
        raise RuntimeError(f"expected scalar type Long but found "
                           f"{_dtype.scalar_type_name(target.dtype)}")
    if weight is not None and weight._data.size != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight._data.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    xp = input._backend
    t = td.reshape(n)
    if n and bool(((t < 0) | (t >= c)).any()):
        raise RuntimeError("target out of range")
    x2 = xd.reshape(n, c)
    with quiet_fp(xp):
        z = margin - xp.take_along_axis(x2, t.reshape(n, 1), axis=1) + x2
        mask = (z > 0) & (xp.arange(c).reshape(1, c) != t.reshape(n, 1))
        hinge = xp.where(mask, z if p == 1 else z * z, 0)
        coef = xp.full((n,), 1.0 / c, dtype=xd.dtype) if weight is None else \
            (weight._data[t] / c).astype(xd.dtype)
        per = (hinge.sum(1) * coef).astype(xd.dtype, copy=False)
    if reduction == "none":
        out = per.reshape(td.shape if xd.ndim <= 1 else (n,))
    else:
        out = _reduce_array(xp, per, reduction)
    return MULTI_MARGIN.record(out, (input,), (p, margin, reduction, coef, mask), self=input,
                               target=const(t))


def _multilabel_margin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    reduction, active, onehot = ctx
    x = saved.self
    n, _, c = active.shape
    dt = x._data.dtype
    # each active pair (target y_j, non-target i) adds 1/C to x[i]'s gradient and takes it from
    # x[y_j]'s: a constant pattern times the per-sample gradient (the loss is piecewise linear)
    pairs = const(active.astype(dt)) * (_per_sample_grad(g, n, reduction) / c).reshape(n, 1, 1)
    gx = pairs.sum(1) - (pairs.sum(2, keepdim=True) * const(onehot.astype(dt))).sum(1)
    return _first_order_only(gx.reshape(x._data.shape), g, x, "multilabel_margin_loss_backward")


MULTILABEL_MARGIN = node("MultilabelMarginLossBackward0", _multilabel_margin_bw,
                         saved=("self", "target", "is_target"),
                         getters={"reduction": lambda s, c: _REDUCTION_ENUM[c[0]]})


@op(functional="multilabel_margin_loss", grad_fn="MultilabelMarginLossBackward0",
    autocast=dict(cuda="fp32", cpu="fp32"))
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: Optional[bool] = None,
                           reduce: Optional[bool] = None, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: per sample, the sum over its target classes j and its other
    classes i of max(0, 1 - (input[j] - input[i])), divided by the number of classes.

    Args:
        input (Tensor): the scores, (N, C) or (C,).
        target (Tensor): int64, input's shape: each row's target classes first, then -1 (what
            follows the first -1 is ignored).
        reduction (str, optional): "none", "mean" or "sum" over the samples. Default: "mean".

    Example::

        >>> x = rustgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> y = rustgrad.tensor([[3, 0, -1, 1]])
        >>> rustgrad.nn.functional.multilabel_margin_loss(x, y)
        tensor(0.8500)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    xd, td = input._data, target._data
    same_devices((xd, td))
    n, c = _margin_input(xd)
    if td.shape != xd.shape and not (xd.ndim == 0 and td.size == 1):
        raise RuntimeError(f"inconsistent target size: {list(td.shape)} for input of size: "
                           f"{list(xd.shape)}")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    xp = input._backend
    t = td.reshape(n, c)
    if t.size and bool(((t < -1) | (t >= c)).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    t = t.astype(_dtype.int64.np, copy=False)
    # the targets of a row are those before its first -1
    valid = xp.cumprod(t != -1, axis=1).astype(bool)
    ts = xp.where(valid, t, 0)
    classes = xp.arange(c).reshape(1, 1, c)
    onehot = (ts[:, :, None] == classes) & valid[:, :, None]  # (N, T, C): target j is class c
    is_target = onehot.any(axis=1)
    x2 = xd.reshape(n, c)
    with quiet_fp(xp):
        z = 1 - xp.take_along_axis(x2, ts, axis=1)[:, :, None] + x2[:, None, :]
        active = valid[:, :, None] & ~is_target[:, None, :] & (z > 0)
        per = (xp.where(active, z, 0).sum(axis=(1, 2)) / c).astype(xd.dtype, copy=False)
    if reduction == "none":
        out = per.reshape(() if xd.ndim <= 1 else (n,))
    else:
        out = _reduce_array(xp, per, reduction)
    return MULTILABEL_MARGIN.record(
        out, (input,), (reduction, active, onehot), self=input, target=const(td),
        is_target=const(is_target.reshape(xd.shape).astype(xd.dtype)))


# ---- triplet_margin_loss ----------------------------------------------------------------------
def check_triplet_dims(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    """torch's refusal of triplets of different ranks."""
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, "
                           f"and negative {n}D inputs")


@op(functional="triplet_margin_loss", autocast=dict(cuda="fp32", cpu="fp32"))
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                        size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                        reduction: str = "mean") -> Tensor:
    """The triplet loss max(0, margin + d(anchor, positive) - d(anchor, negative)), with d the
    p-norm pairwise distance.

    Args:
        anchor (Tensor): (N, D) or (D,).
        positive (Tensor): the samples that should be near, anchor's shape.
        negative (Tensor): the samples that should be far, anchor's shape.
        margin (float, optional): the margin. Default: 1.
        p (float, optional): the norm's order. Default: 2.
        eps (float, optional): added to the differences (pairwise_distance's). Default: 1e-6.
        swap (bool, optional): use the smaller of d(anchor, negative) and
            d(positive, negative) (the distance swap). Default: False.
        reduction (str, optional): "none", "mean" or "sum". Default: "mean".

    Example::

        >>> a = rustgrad.tensor([[0., 0.]])
        >>> rustgrad.nn.functional.triplet_margin_loss(a, a + 1, a + 2, eps=0.)
        tensor(0.)
    """
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_triplet_dims(anchor, positive, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return apply_reduction((d_pos - d_neg + margin).clamp(min=0), reduction)
