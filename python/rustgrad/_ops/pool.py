"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d.

Windows come from the convolution's `im2col` on the device's arrays (or a reshape when they
tile the input); backward formulas are written in rustgrad ops (a scatter of the gradient to the
max positions, a fold of the averaged gradient), so double backward works."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import const, record
from .conv import IntOrPair, check_float, fold_pairs, im2col, pair, single
from .indexing import index_into_zeros
from .views import stack


def _pool_geometry(h: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> Tuple[int, int]:
    """(output size, extra padding at the high end) as torch's pooling_output_shape."""
    if p > ((k - 1) * d + 1) // 2:
        raise RuntimeError(
            f"pad should be at most half of effective kernel size, but got pad={p}, "
            f"kernel_size={k} and dilation={d}"
        )
    num = h + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= h + p:
        o -= 1
    extra = max(0, (o - 1) * s + d * (k - 1) + 1 - (h + 2 * p))
    return o, extra


def _stride(stride: Any, kernel_size: Any) -> Tuple[int, int]:
    """torch's default stride (None or []) is the kernel size."""
    return pair(stride if stride is not None and stride != [] and stride != () else kernel_size)


# ---- max pooling --------------------------------------------------------------------------
def _plane_index(xp: Any, shape: tuple, flat: Any) -> tuple:
    """The (n, c, h, w) index arrays of flat indices into each (H, W) plane."""
    n, c, _, w = shape
    return (xp.arange(n).reshape(n, 1, 1, 1), xp.arange(c).reshape(1, c, 1, 1),
            flat // w, flat % w)


def _in_plane(xp: Any, shape: tuple, flat: Any, dtype: Any) -> Any:
    """(plane index, keep): a window wholly in the padding points past its plane (torch's
    index) and passes nothing, so it is sent in bounds and `keep` (None when every window has
    an element) zeroes its entries."""
    hw = shape[2] * shape[3]
    outside = (flat < 0) | (flat >= hw)
    if not outside.any():
        return _plane_index(xp, shape, flat), None
    keep = const((~outside).astype(dtype))
    return _plane_index(xp, shape, xp.clip(flat, 0, max(hw - 1, 0))), keep


def _max_pool_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, flat, overlap = ctx
    xp = g._backend
    scatter = xp.kernels.max_pool2d_backward
    z = None if scatter is None else scatter(g._data, flat, shape)
    if z is None:
        index, keep = _in_plane(xp, shape, flat, g._data.dtype)
        # windows that do not overlap pick distinct elements: plain assignment, no scatter-add
        if keep is None:
            return index_into_zeros(g, shape, index, overlap)
        return index_into_zeros(g * keep, shape, index, True)
    return record(z, (g,), "IndexPutBackward0", _gather_max_bw, None, (shape, flat))


def _gather_max_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, flat = ctx
    index, keep = _in_plane(g._backend, shape, flat, g._data.dtype)
    return g[index] if keep is None else g[index] * keep


def _check_planes(shape: tuple) -> None:
    """torch refuses empty (H, W) planes or channels (only the batch may be 0)."""
    if 0 in (shape if len(shape) == 3 else shape[1:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size "
                           f"for input, but got:{list(shape)}")


@op(function="max_pool2d", functional="max_pool2d", grad_fn="MaxPool2DWithIndicesBackward0")
def max_pool2d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, dilation: IntOrPair = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """The max of each window of (N, C, H, W) or (C, H, W) input (and its flat index).

    Args:
        input (Tensor): the input tensor.
        kernel_size (int or pair of ints): the window's size.
        stride (int or pair of ints, optional): the step between windows. Default: kernel_size.
        padding (int or pair of ints, optional): implicit -inf padding on each side. Default: 0.
        dilation (int or pair of ints, optional): the spacing of the window's entries. Default: 1.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.
        return_indices (bool, optional): also return each max's flat index in its (H, W) plane.
            Default: False.

    Each window's gradient goes to its max (the first one among ties).

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> rustgrad.nn.functional.max_pool2d(x, 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    xd = input._data
    if xd.ndim in (3, 4):
        _check_planes(xd.shape)
    if xd.ndim == 3:
        res = max_pool2d(input.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
        return (res[0].squeeze(0), res[1].squeeze(0)) if return_indices else res.squeeze(0)
    check_float(input, "max_pool2d")
    k = pair(kernel_size)
    s = _stride(stride, kernel_size)
    p, d = pair(padding), pair(dilation)
    n, c, h, w = xd.shape
    oh, eh = _pool_geometry(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow, ew = _pool_geometry(w, k[1], s[1], p[1], d[1], ceil_mode)
    xp = input._backend
    kernel = xp.kernels.max_pool2d
    res = None if kernel is None else kernel(xd, k, s, p, d, (oh, ow))
    if res is None:
        vals, flat = _max_pool_arrays(xp, xd, k, s, p, d, (oh, eh, ow, ew))
    else:
        vals, flat = res
    overlap = s[0] < d[0] * (k[0] - 1) + 1 or s[1] < d[1] * (k[1] - 1) + 1
    out = record(vals, (input,), "MaxPool2DWithIndicesBackward0", _max_pool_bw, None,
                 (xd.shape, flat, overlap))
    if return_indices:
        return out, const(flat.astype(_dtype.int64.np, copy=False))
    return out


def _max_pool_arrays(xp: Any, xd: Any, k: Tuple[int, int], s: Tuple[int, int],
                     p: Tuple[int, int], d: Tuple[int, int], geometry: Tuple[int, ...]) -> Any:
    """(maxima, flat indices in each plane) from the array namespace's argmax over im2col
    windows: the path of backends without a max-pool kernel."""
    n, c, h, w = xd.shape
    oh, eh, ow, ew = geometry
    if s == k and p == (0, 0) and d == (1, 1) and oh * k[0] == h and ow * k[1] == w:
        # tiling windows: a reshape gives them without copying the input into columns
        cols = xd.reshape(n, c, oh, k[0], ow, k[1]).transpose(0, 1, 3, 5, 2, 4)
    else:
        cols = im2col(xp, xd, k, d, (p[0], p[0] + eh, p[1], p[1] + ew), s, -math.inf)
    cols = cols.reshape(n, c, k[0] * k[1], oh, ow)
    kidx = xp.argmax(cols, axis=2)
    vals = xp.ascontiguousarray(xp.take_along_axis(cols, kidx[:, :, None], axis=2)[:, :, 0])
    ki, kj = kidx // k[1], kidx % k[1]
    hh = xp.arange(oh).reshape(1, 1, oh, 1) * s[0] - p[0] + ki * d[0]
    ww = xp.arange(ow).reshape(1, 1, 1, ow) * s[1] - p[1] + kj * d[1]
    return vals, hh * w + ww


@op(function="max_pool1d", functional="max_pool1d", grad_fn="MaxPool2DWithIndicesBackward0")
def max_pool1d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, dilation: IntOrPair = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """The max of each window of (N, C, L) or (C, L) input (and its index)."""
    s = None if stride is None or stride == [] or stride == () else (1, single(stride))
    res = max_pool2d(input.unsqueeze(-2), (1, single(kernel_size)), s,
                     (0, single(padding)), (1, single(dilation)), ceil_mode, return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


# ---- average pooling ----------------------------------------------------------------------
def _avg_pool_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, k, pads, s, div = ctx
    n, c, h, w = shape
    oh, ow = g._data.shape[2], g._data.shape[3]
    gd = g / const(div) if div.ndim else g / float(div)
    cols = gd.reshape(n * c, 1, oh * ow).expand(n * c, k[0] * k[1], oh * ow)
    pt, pb, pl, pr = pads
    full = fold_pairs(cols, (h + pt + pb, w + pl + pr), k, (1, 1), (0, 0), s)
    return full[:, :, pt:pt + h, pl:pl + w].reshape(n, c, h, w)


def _avg_pool2d(x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                count_include_pad: bool, divisor_override: Optional[int], name: str) -> Tensor:
    xd = x._data
    if xd.ndim == 3:
        return _avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                           count_include_pad, divisor_override, name).squeeze(0)
    check_float(x, "avg_pool2d")
    k = pair(kernel_size)
    s = _stride(stride, kernel_size)
    p = pair(padding)
    n, c, h, w = xd.shape
    oh, eh = _pool_geometry(h, k[0], s[0], p[0], 1, ceil_mode)
    ow, ew = _pool_geometry(w, k[1], s[1], p[1], 1, ceil_mode)
    pads = (p[0], p[0] + eh, p[1], p[1] + ew)
    xp = x._backend
    cols = im2col(xp, xd, k, (1, 1), pads, s)
    total = cols.sum(axis=(2, 3))
    if divisor_override:
        div: Any = xp.asarray(float(divisor_override))
    else:
        hs = xp.arange(oh) * s[0] - p[0]
        ws = xp.arange(ow) * s[1] - p[1]
        if count_include_pad:
            dh = xp.minimum(hs + k[0], h + p[0]) - hs
            dw = xp.minimum(ws + k[1], w + p[1]) - ws
        else:
            dh = xp.minimum(hs + k[0], h) - xp.maximum(hs, 0)
            dw = xp.minimum(ws + k[1], w) - xp.maximum(ws, 0)
        div = (dh[:, None] * dw[None, :]).astype(xd.dtype)
        if bool((div == div.flat[0]).all()):
            div = xp.asarray(div.flat[0])
    out = (total / div).astype(xd.dtype, copy=False)
    return record(out, (x,), name, _avg_pool_bw, None, (xd.shape, k, pads, s, div))


@op(functional="avg_pool2d", grad_fn="AvgPool2DBackward0")
def avg_pool2d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """The mean of each window of (N, C, H, W) or (C, H, W) input.

    Args:
        input (Tensor): the input tensor.
        kernel_size (int or pair of ints): the window's size.
        stride (int or pair of ints, optional): the step between windows. Default: kernel_size.
        padding (int or pair of ints, optional): implicit zero padding on each side. Default: 0.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.
        count_include_pad (bool, optional): count the padding in the divisor. Default: True.
        divisor_override (int, optional): a fixed divisor instead of the window's size.

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> rustgrad.nn.functional.avg_pool2d(x, 2)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """
    return _avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                       divisor_override, "AvgPool2DBackward0")


@op(function="avg_pool1d", functional="avg_pool1d", grad_fn="AvgPool2DBackward0")
def avg_pool1d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of (N, C, L) or (C, L) input."""
    s = None if stride is None or stride == [] or stride == () else (1, single(stride))
    return _avg_pool2d(input.unsqueeze(-2), (1, single(kernel_size)), s, (0, single(padding)),
                       ceil_mode, count_include_pad, None, "AvgPool2DBackward0").squeeze(-2)


# ---- adaptive average pooling -------------------------------------------------------------
def _adaptive_bins(n: int, o: int) -> List[Tuple[int, int]]:
    return [((i * n) // o, -((-(i + 1) * n) // o)) for i in range(o)]


@op(functional="adaptive_avg_pool2d", grad_fn="AdaptiveAvgPool2DBackward0")
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """The mean over output_size bins of the last two dims (bins as torch's: they may overlap).

    Args:
        input (Tensor): (N, C, H, W) or (C, H, W).
        output_size (int or pair of ints): the output's (H, W); None keeps that dim's size.

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> rustgrad.nn.functional.adaptive_avg_pool2d(x, 1)
        tensor([[[[7.5000]]]])
    """
    h, w = input.shape[-2], input.shape[-1]
    if isinstance(output_size, (tuple, list)):
        oh = h if output_size[0] is None else int(output_size[0])
        ow = w if output_size[1] is None else int(output_size[1])
    else:
        oh = ow = int(output_size)
    if oh == 1 and ow == 1:
        return input.mean((-2, -1), keepdim=True)
    if h % oh == 0 and w % ow == 0:
        k = (h // oh, w // ow)
        return _avg_pool2d(input, k, k, 0, False, True, None, "AdaptiveAvgPool2DBackward0")
    rows = []
    for hs, he in _adaptive_bins(h, oh):
        cols = [input[..., hs:he, ws:we].mean((-2, -1)) for ws, we in _adaptive_bins(w, ow)]
        rows.append(stack(cols, -1))
    return stack(rows, -2)


@op(function="adaptive_avg_pool1d", functional="adaptive_avg_pool1d",
    grad_fn="AdaptiveAvgPool2DBackward0")
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """The mean over output_size bins of the last dim."""
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, single(output_size))).squeeze(-2)
