"""3-d pooling: max_pool3d (with indices), avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d,
lp_pool3d and max_unpool3d (the latter two share pool.py's code of the 1-d and 2-d forms).

Windows come from conv3d.py's N-d `windows` (one strided slice per kernel offset, the padding
and ceil_mode's extra high end read as -inf or 0); the average's gradient is its adjoint
`windows_sum`. The adaptive average is three small 0/1 bin matrices applied along D, H and W,
then a division by the bin sizes. Each op records torch's node over the input; its first-order
gradient is recorded, under create_graph, as torch's `...BackwardBackward0` node over (grad,
input), whose formula is the pooling itself (a gather at the maxima, or the average again), so
every order of derivative is available and the gradient requires grad with the input as
torch's does.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const
from .conv import type_name
from .conv3d import Ints, windows, windows_sum
from .pool import _adaptive_bins, _adaptive_windows, _pool_geometry, _unpool_size, lp_pool_nd, max_unpool_nd

IntOrTriple = Union[int, Sequence[int]]


# ---- arguments and checks ---------------------------------------------------------------------
def _triple(v: Any, what: str, name: str, rule: str) -> Ints:
    """An int or a 1- or 3-sequence as three ints; anything else is torch's error."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * 3
        if len(v) == 3:
            return tuple(int(e) for e in v)
        raise RuntimeError(f"{name}: {what} must {rule}")
    return (int(v),) * 3


def _omitted(stride: Any) -> bool:
    return stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)


def _check_volume(xd: Any, name: str) -> None:
    """torch's checks of a pooling input: 4-D or 5-D, no empty dim but the batch."""
    if xd.ndim not in (4, 5):
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    for dim in range(1 if xd.ndim == 5 else 0, xd.ndim):
        if xd.shape[dim] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(xd.shape)} with dimension {dim} being empty"
            )


def _geometry(size: Ints, k: Ints, s: Ints, p: Ints, d: Ints, ceil_mode: bool) -> Tuple[Ints, Ints]:
    """(output sizes, extra padding at each high end), with torch's checks in its order."""
    outs, extras = [], []
    for i in range(3):
        if s[i] == 0:
            raise RuntimeError("stride should not be zero")
        if p[i] < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p[i]}")
        o, e = _pool_geometry(size[i], k[i], s[i], p[i], d[i], ceil_mode)
        outs.append(o)
        extras.append(e)
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kT: {k[0]} "
                           f"kH: {k[1]} kW: {k[2]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dT: {s[0]} dH: {s[1]} "
                           f"dW: {s[2]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilationT: {d[0]} "
                           f"dilationH: {d[1]} dilationW: {d[2]}")
    return tuple(outs), tuple(extras)


def _too_small(c: int, size: Ints, out: Ints) -> None:
    if min(out) < 1:
        raise RuntimeError(
            f"Given input size: ({c}x{size[0]}x{size[1]}x{size[2]}). Calculated output size: "
            f"({c}x{out[0]}x{out[1]}x{out[2]}). Output size is too small"
        )


def _batched(xd: Any) -> Any:
    return xd if xd.ndim == 5 else xd[None]


def _lowest(xp: Any, dtype: Any) -> Any:
    """The padding of a max: -inf, or an integer dtype's smallest value."""
    return -math.inf if _dtype.is_floating_np(dtype) else xp.iinfo(dtype).min


def _first_max(xp: Any, cols: Any, axis: int) -> Any:
    """The index of each window's max along `axis`: the first of ties, as torch's scan, and
    the last NaN where there is one (torch's scan keeps taking NaNs)."""
    k = xp.argmax(cols, axis=axis)
    if cols.dtype.kind != "f":
        return k
    nan = xp.isnan(cols)
    last = cols.shape[axis] - 1 - xp.argmax(xp.flip(nan, axis=axis), axis=axis)
    return xp.where(nan.any(axis=axis), last, k)


# ---- max_pool3d -------------------------------------------------------------------------------
def _scatter(g: Tensor, x_shape: Ints, flat: Any, keep: Any) -> Any:
    """zeros(x_shape) with each output's gradient added at its flat index in its volume."""
    xp = g._backend
    shape5 = (1,) * (5 - len(x_shape)) + tuple(x_shape)
    n, c = shape5[:2]
    vol = shape5[2] * shape5[3] * shape5[4]
    per = math.prod(g._data.shape[-3:])  # (explicit: an empty batch has no -1 to infer)
    gd = g._data.reshape(n, c, per)
    if keep is not None:
        gd = gd * keep.reshape(n, c, per)
    z = xp.zeros((n, c, vol), dtype=gd.dtype)
    index = (xp.arange(n).reshape(n, 1, 1), xp.arange(c).reshape(1, c, 1), flat.reshape(n, c, per))
    xp.add_at(z, index, gd)
    return z.reshape(x_shape)


def _gather(gg: Tensor, flat: Any, keep: Any, out_shape: Ints) -> Tensor:
    """gg's entries at the flat indices (per (N, C) volume): the adjoint of `_scatter`."""
    lead = tuple(out_shape[:-3])
    picked = gg.reshape(lead + (-1,)).gather(-1, const(flat.reshape(lead + (-1,))))
    picked = picked.reshape(out_shape)
    return picked if keep is None else picked * const(keep.reshape(out_shape))


def _max_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    flat, keep = saved.result1._data, ctx[1]
    z = _scatter(g, tuple(x.shape), flat, keep)
    return MAX_POOL3D_BACKWARD.record(z, (g, x), (flat, keep, tuple(g.shape)), self=x)


def _max_bb(gg: Tensor, saved: Any, ctx: Any) -> Any:
    flat, keep, out_shape = ctx
    return _gather(gg, flat, keep, out_shape), None


def _ctx_getter(i: int) -> Any:
    return lambda saved, ctx: ctx[0][i]


_POOL_GETTERS = {name: _ctx_getter(i) for i, name in enumerate(
    ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))}
MAX_POOL3D = node("MaxPool3DWithIndicesBackward0", _max_bw, saved=("self", "result1"),
                  getters=_POOL_GETTERS)
MAX_POOL3D_BACKWARD = node("MaxPool3DWithIndicesBackwardBackward0", _max_bb, saved=("self",))


@op(function="max_pool3d", functional="max_pool3d",
    grad_fn=("MaxPool3DWithIndicesBackward0", "MaxPool3DWithIndicesBackwardBackward0"),
    autocast=dict(cpu="fp32"))
def max_pool3d(input: Tensor, kernel_size: IntOrTriple, stride: Optional[IntOrTriple] = None,
               padding: IntOrTriple = 0, dilation: IntOrTriple = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """The max of each window of (N, C, D, H, W) or (C, D, H, W) input (and its flat index).

    Args:
        kernel_size (int or tuple of three ints): the window's size.
        stride (int or tuple of three ints, optional): the step between windows.
            Default: kernel_size.
        padding (int or tuple of three ints, optional): implicit -inf padding on each side.
            Default: 0.
        dilation (int or tuple of three ints, optional): the spacing of the window's entries.
            Default: 1.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.
        return_indices (bool, optional): also return each max's flat index in its (D, H, W)
            volume. Default: False.

    Each window's gradient goes to its max (the first one among ties).

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.max_pool3d(x, 2, return_indices=True)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    name = "max_pool3d"
    k = _triple(kernel_size, "kernel_size", name, "either be a single int, or a tuple of three ints")
    s = k if _omitted(stride) else _triple(
        stride, "stride", name, "either be omitted, a single int, or a tuple of three ints")
    p = _triple(padding, "padding", name, "either be a single int, or a tuple of three ints")
    d = _triple(dilation, "dilation", name, "be either a single int, or a tuple of three ints")
    xd = input._data
    _check_volume(xd, "max_pool3d_with_indices_out_cpu_template")
    x5 = _batched(xd)
    n, c = x5.shape[:2]
    size = tuple(x5.shape[2:])
    out, extra = _geometry(size, k, s, p, d, ceil_mode)
    _too_small(c, size, out)
    xp = input._backend
    pads = tuple((p[i], p[i] + extra[i]) for i in range(3))
    cols = windows(xp, x5, k, d, pads, s, _lowest(xp, xd.dtype))
    cols = cols.reshape((n, c, k[0] * k[1] * k[2]) + out)
    kidx = _first_max(xp, cols, 2)
    vals = xp.ascontiguousarray(xp.take_along_axis(cols, kidx[:, :, None], axis=2)[:, :, 0])
    kk = (kidx // (k[1] * k[2]), (kidx // k[2]) % k[1], kidx % k[2])
    pos = [xp.arange(out[i]).reshape(tuple(out[i] if j == i else 1 for j in range(3))) * s[i]
           - p[i] + kk[i] * d[i] for i in range(3)]
    inside = (pos[0] >= 0) & (pos[0] < size[0]) & (pos[1] >= 0) & (pos[1] < size[1]) \
        & (pos[2] >= 0) & (pos[2] < size[2])
    flat = (pos[0] * size[1] + pos[1]) * size[2] + pos[2]
    flat = xp.where(inside, flat, 0).astype(_dtype.int64.np, copy=False)
    # a window wholly in the padding passes no gradient (kept None when there is none)
    keep = None
    if not bool(inside.all()):
        keep = inside.astype(xd.dtype)
    out_shape = tuple(xd.shape[:-3]) + out
    idx = const(flat.reshape(out_shape))
    given = () if _omitted(stride) else s
    ctx = ((k, given, p, d, bool(ceil_mode)), None if keep is None else keep.reshape(out_shape))
    res = MAX_POOL3D.record(vals.reshape(out_shape), (input,), ctx, self=input, result1=idx)
    return (res, idx) if return_indices else res


@op(functional="max_pool3d_with_indices", grad_fn="MaxPool3DWithIndicesBackward0")
def max_pool3d_with_indices(input: Tensor, kernel_size: IntOrTriple,
                            stride: Optional[IntOrTriple] = None, padding: IntOrTriple = 0,
                            dilation: IntOrTriple = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    """max_pool3d's maxima and their flat indices, always both (return_indices is ignored).

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.max_pool3d_with_indices(x, 2)[1]
        tensor([[[[[7]]]]])
    """
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- avg_pool3d -------------------------------------------------------------------------------
def _avg_arrays(xp: Any, x5: Any, k: Ints, s: Ints, pads: Any, div: Any, out: Ints) -> Any:
    cols = windows(xp, x5, k, (1, 1, 1), pads, s)
    total = cols.sum(axis=(2, 3, 4))
    if x5.dtype.kind in "iu":  # torch divides integers truncating toward zero
        return xp.trunc(total / div).astype(x5.dtype)
    return (total / div).astype(x5.dtype, copy=False)


def _avg_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    (k, _, p, _, _, _), args = ctx
    shape, pads, s, div = args
    xp = g._backend
    gd = g._data
    shape5 = (1,) * (5 - len(shape)) + tuple(shape)
    g5 = (gd / div).astype(gd.dtype, copy=False).reshape(shape5[:2] + gd.shape[-3:])
    cols = xp.broadcast_to(g5[:, :, None, None, None], shape5[:2] + tuple(k) + g5.shape[2:])
    z = windows_sum(xp, cols, shape5[2:], (1, 1, 1), pads, s).reshape(shape)
    return AVG_POOL3D_BACKWARD.record(z, (g, x), ctx[0], self=x)


def _avg_bb(gg: Tensor, saved: Any, ctx: Any) -> Any:
    k, stride, p, ceil_mode, count_include_pad, divisor_override = ctx
    return avg_pool3d(gg, k, stride, p, ceil_mode, count_include_pad, divisor_override), None


def _avg_getter(i: int) -> Any:
    return lambda saved, ctx: ctx[0][i]


AVG_POOL3D = node("AvgPool3DBackward0", _avg_bw, saved=("self",), getters={
    name: _avg_getter(i) for i, name in enumerate(
        ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
         "divisor_override"))})
AVG_POOL3D_BACKWARD = node("AvgPool3DBackwardBackward0", _avg_bb, saved=("self",))


@op(functional="avg_pool3d", grad_fn=("AvgPool3DBackward0", "AvgPool3DBackwardBackward0"),
    autocast=dict(cpu="fp32"))
def avg_pool3d(input: Tensor, kernel_size: IntOrTriple, stride: Optional[IntOrTriple] = None,
               padding: IntOrTriple = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """The mean of each window of (N, C, D, H, W) or (C, D, H, W) input.

    Args:
        kernel_size (int or tuple of three ints): the window's size.
        stride (int or tuple of three ints, optional): the step between windows.
            Default: kernel_size.
        padding (int or tuple of three ints, optional): implicit zero padding on each side.
            Default: 0.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.
        count_include_pad (bool, optional): count the padding in the divisor. Default: True.
        divisor_override (int, optional): a fixed divisor instead of the window's size.

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.avg_pool3d(x, 2)
        tensor([[[[[3.5000]]]]])
    """
    name = "avg_pool3d"
    k = _triple(kernel_size, "kernel_size", name, "be a single int, or a tuple of three ints")
    s = k if _omitted(stride) else _triple(
        stride, "stride", name, "be omitted, a single int, or a tuple of three ints")
    p = _triple(padding, "padding", name, "be a single int, or a tuple of three ints")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xd = input._data
    _check_volume(xd, "avg_pool3d")
    x5 = _batched(xd)
    n, c = x5.shape[:2]
    size = tuple(x5.shape[2:])
    out, extra = _geometry(size, k, s, p, (1, 1, 1), ceil_mode)
    if any(size[i] < k[i] for i in range(3)):
        raise RuntimeError(
            f"input image (T: {size[0]} H: {size[1]} W: {size[2]}) smaller than kernel size "
            f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})"
        )
    _too_small(c, size, out)
    xp = input._backend
    pads = tuple((p[i], p[i] + extra[i]) for i in range(3))
    if divisor_override:
        div: Any = float(divisor_override)
    else:
        counts = []
        for i in range(3):
            lo = xp.arange(out[i]) * s[i] - p[i]
            if count_include_pad:  # the window within input and padding, not past it
                cnt = xp.minimum(lo + k[i], size[i] + p[i]) - lo
            else:
                cnt = xp.minimum(lo + k[i], size[i]) - xp.maximum(lo, 0)
            counts.append(cnt.reshape(tuple(out[i] if j == i else 1 for j in range(3))))
        div = (counts[0] * counts[1] * counts[2]).astype(
            xd.dtype if xd.dtype.kind == "f" else _dtype.float64.np)
    res = _avg_arrays(xp, x5, k, s, pads, div, out).reshape(tuple(xd.shape[:-3]) + out)
    given = () if _omitted(stride) else s
    ctx = ((k, given, p, bool(ceil_mode), bool(count_include_pad), divisor_override),
           (tuple(xd.shape), pads, s, div))
    return AVG_POOL3D.record(res, (input,), ctx, self=input)


# ---- adaptive_avg_pool3d ----------------------------------------------------------------------
def _output_triple(input: Tensor, output_size: Any, name: str, arity: str) -> Ints:
    size = tuple(input.shape[-3:])
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 3:
            raise RuntimeError(f"{name}{arity}")
        return tuple(size[i] if output_size[i] is None else int(output_size[i])
                     for i in range(3))
    return (int(output_size),) * 3


def _bin_matrices(xp: Any, size: Ints, out: Ints, dtype: Any) -> Tuple[Any, Any]:
    """Per dim, the (O, S) 0/1 matrix of torch's adaptive bins, and the bin sizes (O,)."""
    mats, counts = [], []
    for n, o in zip(size, out):
        m = xp.zeros((o, n), dtype=dtype)
        for i, (lo, hi) in enumerate(_adaptive_bins(n, o)):
            m[i, lo:hi] = 1
        mats.append(m)
        counts.append(m.sum(axis=1))
    return mats, counts


def _apply_bins(xp: Any, a: Any, mats: Sequence[Any]) -> Any:
    """(..., D, H, W) -> (..., OD, OH, OW): each dim contracted with its (O, S) matrix."""
    a = xp.matmul(a, mats[2].T)  # (..., D, H, OW)
    a = xp.matmul(mats[1], a)  # (..., D, OH, OW)
    lead = a.shape[:-3]
    a2 = a.reshape(lead + (a.shape[-3], -1))
    return xp.matmul(mats[0], a2).reshape(lead + (mats[0].shape[0],) + a.shape[-2:])


def _adaptive_avg_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    mats, div = ctx
    xp = g._backend
    gd = (g._data / div).astype(g._data.dtype, copy=False)
    z = _apply_bins(xp, gd, [m.T for m in mats])
    return ADAPTIVE_AVG_POOL3D_BACKWARD.record(xp.ascontiguousarray(z), (g, x),
                                               tuple(g.shape[-3:]), self=x)


def _adaptive_avg_bb(gg: Tensor, saved: Any, out: Any) -> Any:
    return adaptive_avg_pool3d(gg, out), None


ADAPTIVE_AVG_POOL3D = node("AdaptiveAvgPool3DBackward0", _adaptive_avg_bw, saved=("self",))
ADAPTIVE_AVG_POOL3D_BACKWARD = node("AdaptiveAvgPool3DBackwardBackward0", _adaptive_avg_bb,
                                    saved=("self",))


@op(functional="adaptive_avg_pool3d",
    grad_fn=("AdaptiveAvgPool3DBackward0", "AdaptiveAvgPool3DBackwardBackward0"),
    autocast=dict(cpu="fp32"))
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """The mean over output_size bins of the last three dims (bins as torch's: they may
    overlap).

    Args:
        input (Tensor): (N, C, D, H, W) or (C, D, H, W).
        output_size (int or tuple of three ints): the output's (D, H, W); None keeps that dim's
            size.

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.adaptive_avg_pool3d(x, (1, 1, 2)).flatten()
        tensor([3., 4.])
    """
    xd = input._data
    if isinstance(output_size, (tuple, list)) and xd.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    if xd.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(xd.shape)}")
    out = _output_triple(input, output_size, "adaptive_avg_pool3d", ": output_size must be 3")
    if out == (1, 1, 1):  # torch's shortcut: a mean (MeanBackward1)
        return input.mean((-3, -2, -1), keepdim=True)
    for dim in range(1 if xd.ndim == 5 else 0, xd.ndim):
        if xd.shape[dim] == 0:
            raise RuntimeError(
                "adaptive_avg_pool3d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {list(xd.shape)} with dimension {dim} being "
                "empty")
    if min(out) < 0:
        raise RuntimeError("adaptive_avg_pool3d: elements of output_size must be greater than "
                           f"or equal to 0 but received {{{out[0]}, {out[1]},{out[2]}}}")
    if not _dtype.is_floating_np(xd.dtype):
        raise NotImplementedError(
            f'"adaptive_avg_pool3d_cpu" not implemented for \'{type_name(input)}\'')
    xp = input._backend
    mats, counts = _bin_matrices(xp, tuple(xd.shape[-3:]), out, xd.dtype)
    div = counts[0].reshape(-1, 1, 1) * counts[1].reshape(1, -1, 1) * counts[2].reshape(1, 1, -1)
    res = (_apply_bins(xp, xd, mats) / div).astype(xd.dtype, copy=False)
    return ADAPTIVE_AVG_POOL3D.record(xp.ascontiguousarray(res), (input,), (mats, div),
                                      self=input)


# ---- adaptive_max_pool3d ----------------------------------------------------------------------
def _adaptive_max_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    flat = saved.result1._data
    z = _scatter(g, tuple(x.shape), flat, None)
    return ADAPTIVE_MAX_POOL3D_BACKWARD.record(z, (g, x), (flat, None, tuple(g.shape)), self=x)


ADAPTIVE_MAX_POOL3D = node("AdaptiveMaxPool3DBackward0", _adaptive_max_bw,
                           saved=("self", "result1"))
ADAPTIVE_MAX_POOL3D_BACKWARD = node("AdaptiveMaxPool3DBackwardBackward0", _max_bb,
                                    saved=("self",))


@op(functional="adaptive_max_pool3d_with_indices",
    grad_fn=("AdaptiveMaxPool3DBackward0", "AdaptiveMaxPool3DBackwardBackward0"))
def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    """The max over output_size bins of the last three dims, and each max's flat index in its
    (D, H, W) volume (bins as torch's adaptive pooling: they may overlap).

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.adaptive_max_pool3d_with_indices(x, 1)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    xd = input._data
    if isinstance(output_size, (tuple, list)) and xd.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    if xd.ndim not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(xd.shape)}")
    for dim in range(1, xd.ndim):
        if xd.shape[dim] == 0:
            raise RuntimeError(
                "adaptive_max_pool3d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {list(xd.shape)} with dimension {dim} being "
                "empty")
    out = _output_triple(input, output_size, "adaptive_max_pool3d",
                         "(): internal error: output_size.size() must be 3")
    if min(out) < 0:
        shape = list(xd.shape[:-3]) + list(out)
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: {shape}")
    if not _dtype.is_floating_np(xd.dtype):
        raise NotImplementedError(
            f'"adaptive_max_pool3d_cpu" not implemented for \'{type_name(input)}\'')
    xp = input._backend
    x5 = _batched(xd)
    n, c = x5.shape[:2]
    size = tuple(x5.shape[2:])
    out_shape = tuple(xd.shape[:-3]) + out
    if min(out) == 0:
        vals = xp.zeros(out_shape, dtype=xd.dtype)
        flat = xp.zeros(out_shape, dtype=_dtype.int64.np)
    else:
        wins = [_adaptive_windows(xp, size[i], out[i]) for i in range(3)]  # (O, K) each
        kd, kh, kw = (w[0].shape[1] for w in wins)
        win = x5[:, :, wins[0][0].reshape(-1)][:, :, :, wins[1][0].reshape(-1)][
            :, :, :, :, wins[2][0].reshape(-1)]
        win = win.reshape(n, c, out[0], kd, out[1], kh, out[2], kw).transpose(
            0, 1, 2, 4, 6, 3, 5, 7).reshape((n, c) + out + (kd * kh * kw,))
        valid = (wins[0][1][:, None, None, :, None, None]
                 & wins[1][1][None, :, None, None, :, None]
                 & wins[2][1][None, None, :, None, None, :]).reshape(out + (kd * kh * kw,))
        win = xp.where(valid, win, xd.dtype.type(-math.inf))
        k = _first_max(xp, win, -1)
        vals = xp.ascontiguousarray(xp.take_along_axis(win, k[..., None], axis=-1)[..., 0])
        pos = []
        for i, kk in enumerate((k // (kh * kw), (k // kw) % kh, k % kw)):
            rows = wins[i][0]  # (O_i, K_i)
            along = tuple(out[i] if j == i else 1 for j in range(3))
            r = xp.broadcast_to(rows.reshape(along + (rows.shape[1],)), out + (rows.shape[1],))
            pos.append(xp.take_along_axis(xp.broadcast_to(r, (n, c) + r.shape), kk[..., None],
                                          axis=-1)[..., 0])
        flat = ((pos[0] * size[1] + pos[1]) * size[2] + pos[2]).astype(_dtype.int64.np,
                                                                        copy=False)
    idx = const(flat.reshape(out_shape))
    res = ADAPTIVE_MAX_POOL3D.record(vals.reshape(out_shape), (input,), None, self=input,
                                     result1=idx)
    return res, idx


@op(functional="adaptive_max_pool3d", grad_fn="AdaptiveMaxPool3DBackward0",
    autocast=dict(cpu="fp32"))
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The max over output_size bins of the last three dims (and its flat index).

    Args:
        input (Tensor): (N, C, D, H, W) or (C, D, H, W).
        output_size (int or tuple of three ints): the output's (D, H, W); None keeps that dim's
            size.
        return_indices (bool, optional): also return each max's flat index in its (D, H, W)
            volume. Default: False.

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.adaptive_max_pool3d(x, (1, 1, 2)).flatten()
        tensor([6., 7.])
    """
    res = adaptive_max_pool3d_with_indices(input, output_size)
    return res if return_indices else res[0]


# ---- lp_pool3d --------------------------------------------------------------------------------
def _as_triple(v: Any) -> Tuple[Any, ...]:
    """torch's `_triple`: a sequence as it is, anything else three times."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * 3


@op(functional="lp_pool3d", grad_fn="PowBackward0")
def lp_pool3d(input: Tensor, norm_type: float, kernel_size: IntOrTriple,
              stride: Optional[IntOrTriple] = None, ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window of (N, C, D, H, W) or (C, D, H, W) input: (sum x^p)^(1/p).

    Args:
        norm_type (float): p (not 0); inf gives max pooling of |x|, -inf min pooling of |x|.
        kernel_size (int or tuple of three ints): the window's size.
        stride (int or tuple of three ints, optional): the step between windows.
            Default: kernel_size.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.

    Example::

        >>> x = rustgrad.tensor([3., 4., 0., 0., 0., 0., 0., 0.]).view(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.lp_pool3d(x, 2, 2)
        tensor([[[[[5.]]]]])
    """
    kd, kh, kw = _as_triple(kernel_size)
    return lp_pool_nd(input, norm_type, kernel_size, stride, ceil_mode, kd * kh * kw,
                      max_pool3d, avg_pool3d)


# ---- max_unpool3d -----------------------------------------------------------------------------
@op(functional="max_unpool3d", grad_fn="MaxUnpool3DBackward0", autocast=dict(cpu="fp32"))
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: IntOrTriple,
                 stride: Optional[IntOrTriple] = None, padding: IntOrTriple = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool3d: each value put back at its index, zeros elsewhere.

    Args:
        input (Tensor): the pooled values, (N, C, D, H, W) or (C, D, H, W).
        indices (Tensor): max_pool3d's indices (return_indices=True).
        kernel_size (int or tuple of three ints): the pooling's window.
        stride (int or tuple of three ints, optional): the pooling's stride.
            Default: kernel_size.
        padding (int or tuple of three ints, optional): the pooling's padding. Default: 0.
        output_size (sequence of ints, optional): the size to restore, when the pooling's
            input size is ambiguous.

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> v, i = rustgrad.nn.functional.max_pool3d(x, 2, return_indices=True)
        >>> rustgrad.nn.functional.max_unpool3d(v, i, 2).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    k = _as_triple(kernel_size)
    s = k if stride is None else _as_triple(stride)
    size = _unpool_size(input, k, s, _as_triple(padding), output_size, len(k))
    return max_unpool_nd(input, indices, size, 3, s)
