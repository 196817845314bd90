"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d, adaptive_max_pool1d/2d,
max_unpool1d/2d, lp_pool1d/2d, and embedding_bag (embedding rows pooled by bag).

Windows come from the convolution's `im2col` on the device's arrays (or a reshape when they
tile the input); backward formulas are written in rustgrad ops (a scatter of the gradient to the
max positions, a fold of the averaged gradient), so double backward works."""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const
from .conv import IntOrPair, check_float, fold_pairs, im2col, pair, single
from .indexing import embedding_renorm_, index_into_zeros
from .joins import stack


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
    return MAX_POOL_SCATTER.record(z, (g,), (shape, flat))


MAX_POOL = node("MaxPool2DWithIndicesBackward0", _max_pool_bw)


def _gather_max_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, flat = ctx
    index, keep = _in_plane(g._backend, shape, flat, g._data.dtype)
    return g[index] if keep is None else g[index] * keep


# the kernel's scatter of a max-pool gradient ends on index_put's node (indexing.py's spec), with
# max-pool's formula: the gradient gathered back at the maxima
MAX_POOL_SCATTER = node("IndexPutBackward0", _gather_max_bw, variant=True)


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
    out = MAX_POOL.record(vals, (input,), (xd.shape, flat, overlap))
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


AVG_POOL = node("AvgPool2DBackward0", _avg_pool_bw)
ADAPTIVE_AVG_POOL = node("AdaptiveAvgPool2DBackward0", _avg_pool_bw)


def _avg_pool2d(x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
                count_include_pad: bool, divisor_override: Optional[int], spec: Any) -> Tensor:
    xd = x._data
    if xd.ndim == 3:
        return _avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                           count_include_pad, divisor_override, spec).squeeze(0)
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
    return spec.record(out, (x,), (xd.shape, k, pads, s, div))


@op(functional="avg_pool2d", grad_fn="AvgPool2DBackward0")
def avg_pool2d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Optional[int] = None) -> Tensor:
    """The mean of each window of (N, C, H, W) or (C, H, W) input.

    Args:
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
                       divisor_override, AVG_POOL)


@op(function="avg_pool1d", functional="avg_pool1d", grad_fn="AvgPool2DBackward0")
def avg_pool1d(input: Tensor, kernel_size: IntOrPair, stride: Optional[IntOrPair] = None,
               padding: IntOrPair = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean of each window of (N, C, L) or (C, L) input."""
    s = None if stride is None or stride == [] or stride == () else (1, single(stride))
    return _avg_pool2d(input.unsqueeze(-2), (1, single(kernel_size)), s, (0, single(padding)),
                       ceil_mode, count_include_pad, None, AVG_POOL).squeeze(-2)


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
        return _avg_pool2d(input, k, k, 0, False, True, None, ADAPTIVE_AVG_POOL)
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


@op(function="max_pool1d_with_indices", functional="max_pool1d_with_indices",
    grad_fn="MaxPool2DWithIndicesBackward0")
def max_pool1d_with_indices(input: Tensor, kernel_size: IntOrPair,
                            stride: Optional[IntOrPair] = None, padding: IntOrPair = 0,
                            dilation: IntOrPair = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """max_pool1d's maxima and their indices, always both (return_indices is ignored).

    Example::

        >>> x = rustgrad.tensor([[[1., 3., 2., 0.]]])
        >>> rustgrad.nn.functional.max_pool1d_with_indices(x, 2)[1]
        tensor([[[1, 2]]])
    """
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@op(functional="max_pool2d_with_indices", grad_fn="MaxPool2DWithIndicesBackward0")
def max_pool2d_with_indices(input: Tensor, kernel_size: IntOrPair,
                            stride: Optional[IntOrPair] = None, padding: IntOrPair = 0,
                            dilation: IntOrPair = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    """max_pool2d's maxima and their flat indices, always both (return_indices is ignored).

    Example::

        >>> x = rustgrad.arange(4.).view(1, 1, 2, 2)
        >>> rustgrad.nn.functional.max_pool2d_with_indices(x, 2)[1]
        tensor([[[[3]]]])
    """
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# ---- max unpooling ------------------------------------------------------------------------
def _max_unpool_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    in_shape, dims = ctx
    lead = tuple(in_shape[:-dims])
    n = math.prod(in_shape[-dims:])
    flat = g.reshape(lead + (math.prod(g.shape[-dims:]),))
    return flat.gather(-1, saved.indices.reshape(lead + (n,))).reshape(in_shape)


MAX_UNPOOL = node("MaxUnpool2DBackward0", _max_unpool_bw, saved=("indices",))
MAX_UNPOOL3D = node("MaxUnpool3DBackward0", _max_unpool_bw, saved=("indices",))


def _unpool_size(input: Tensor, k: Tuple[int, ...], s: Tuple[int, ...], p: Tuple[int, ...],
                 output_size: Any, dims: int) -> List[int]:
    """The unpooled spatial size: the pooling's input size by default, or output_size checked
    against it (each within a stride of the default), as torch's."""
    shape = input.shape
    default = [(shape[-dims + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(dims)]
    if output_size is None:
        size = default
    else:
        given = output_size.tolist() if isinstance(output_size, Tensor) else output_size
        if len(given) == dims + 2:
            given = given[2:]
        if len(given) != dims:
            raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} "
                             f"elements, but it has a length of '{len(given)}'")
        for d in range(dims):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not lo < given[d] < hi:
                raise ValueError(f'invalid output_size "{given}" (dim {d} must be between '
                                 f"{lo} and {hi})")
        size = [int(v) for v in given]
    for d in range(dims):
        if size[d] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial "
                             f"dimensions, but got output_size[{d}]={size[d]}")
    return size


def max_unpool_nd(input: Tensor, indices: Tensor, size: List[int], dims: int,
                  stride: Optional[Tuple[int, ...]] = None) -> Tensor:
    """Each value of input put back at its flat index in an output plane (dims=2) or volume
    (dims=3) of `size`, zeros elsewhere, with torch's checks in its order (the stride is
    checked by the 3-d op only)."""
    xd, idd = input._data, indices._data
    if idd.dtype != _dtype.int64.np:
        raise RuntimeError("elements in indices should be type int64 but got: "
                           f"{_dtype.scalar_type_name(indices.dtype)}")
    if xd.shape != idd.shape:
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({list(xd.shape)}) but got indices tensor with shape: {list(idd.shape)}")
    if xd.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Input to max_unpooling{dims}d should be a {dims + 1}d or "
                           f"{dims + 2}d Tensor, but got a tensor with {xd.ndim} dimensions.")
    if dims == 3 and len(size) != 3:
        raise RuntimeError("There should be exactly three elements (depth, height, width) in "
                           f"output_size, but got {len(size)} elements.")
    for dim in range(1, xd.ndim):  # (as torch's: the first dim is never checked)
        if xd.shape[dim] == 0:
            raise RuntimeError(
                f"max_unpooling{dims}d_forward_out_cpu(): Expected input to have non-zero size "
                f"for non-batch dimensions, but input has sizes {list(xd.shape)} with "
                f"dimension {dim} being empty")
    if stride is not None and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: {list(stride)}")
    if not _dtype.is_floating_np(xd.dtype):
        raise NotImplementedError(
            f'"max_unpool{dims}d" not implemented for \'{_dtype.scalar_type_name(input.dtype)}\'')
    shape = tuple(xd.shape)
    lead = shape[:-dims]
    rows = math.prod(lead)
    vol = math.prod(size)
    xp = input._backend
    out = xp.zeros((rows, vol), dtype=xd.dtype)
    if out.size:  # (an empty output takes nothing: torch checks no index then)
        flat = idd.reshape(rows, -1)
        bad = (flat < 0) | (flat >= vol)
        if flat.size and bool(bad.any()):
            raise RuntimeError(f"Found an invalid max index: {int(flat[bad][0])} (output volumes "
                               f"are of size {'x'.join(str(v) for v in size)}")
        xp.put_along_axis(out, flat, xd.reshape(rows, -1), axis=1)
    spec = MAX_UNPOOL3D if dims == 3 else MAX_UNPOOL
    return spec.record(out.reshape(lead + tuple(size)), (input,), (shape, dims),
                       indices=indices)


@op(functional="max_unpool2d", grad_fn="MaxUnpool2DBackward0", autocast=dict(cpu="fp32"))
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: IntOrPair,
                 stride: Optional[IntOrPair] = None, padding: IntOrPair = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool2d: each value put back at its index, zeros elsewhere.

    Args:
        input (Tensor): the pooled values, (N, C, H, W) or (C, H, W).
        indices (Tensor): max_pool2d's indices (return_indices=True).
        kernel_size (int or pair of ints): the pooling's window.
        stride (int or pair of ints, optional): the pooling's stride. Default: kernel_size.
        padding (int or pair of ints, optional): the pooling's padding. Default: 0.
        output_size (sequence of ints, optional): the size to restore, when the pooling's
            input size is ambiguous.

    Example::

        >>> x = rustgrad.tensor([[[[1., 2.], [3., 4.]]]])
        >>> v, i = rustgrad.nn.functional.max_pool2d(x, 2, return_indices=True)
        >>> rustgrad.nn.functional.max_unpool2d(v, i, 2)
        tensor([[[[0., 0.],
                  [0., 4.]]]])
    """
    k = pair(kernel_size)
    s = _stride(stride, kernel_size)
    size = _unpool_size(input, k, s, pair(padding), output_size, 2)
    return max_unpool_nd(input, indices, size, 2)


@op(functional="max_unpool1d", grad_fn="MaxUnpool2DBackward0")
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: IntOrPair,
                 stride: Optional[IntOrPair] = None, padding: IntOrPair = 0,
                 output_size: Any = None) -> Tensor:
    """The partial inverse of max_pool1d: each value put back at its index, zeros elsewhere.

    Args:
        input (Tensor): the pooled values, (N, C, L) or (C, L).
        indices (Tensor): max_pool1d's indices (return_indices=True).
        kernel_size (int): the pooling's window.
        stride (int, optional): the pooling's stride. Default: kernel_size.
        padding (int, optional): the pooling's padding. Default: 0.
        output_size (sequence of ints, optional): the size to restore.

    Example::

        >>> v, i = rustgrad.nn.functional.max_pool1d(rustgrad.tensor([[[1., 3., 2., 0.]]]), 2,
        ...                                          return_indices=True)
        >>> rustgrad.nn.functional.max_unpool1d(v, i, 2)
        tensor([[[0., 3., 2., 0.]]])
    """
    k = single(kernel_size)
    s = single(stride if stride is not None and stride != [] and stride != () else kernel_size)
    size = _unpool_size(input, (k,), (s,), (single(padding),), output_size, 1)
    return max_unpool_nd(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1], 2).squeeze(-1)


# ---- adaptive max pooling -----------------------------------------------------------------
def _adaptive_windows(xp: Any, n: int, o: int) -> Tuple[Any, Any]:
    """(index (o, K), valid (o, K)): the positions of each of torch's adaptive bins along a dim
    of size n, padded to the widest bin K (the padding points at the bin's start)."""
    bins = _adaptive_bins(n, o)
    width = max(e - s for s, e in bins)
    starts = xp.asarray([s for s, _ in bins]).reshape(o, 1)
    ends = xp.asarray([e for _, e in bins]).reshape(o, 1)
    idx = starts + xp.arange(width).reshape(1, width)
    valid = idx < ends
    return xp.where(valid, idx, starts), valid


def _adaptive_max_bw(g: Tensor, saved: Any, shape: Any) -> Any:
    x, flat = saved.self, saved.result1._data
    xp = g._backend
    shape4 = shape if len(shape) == 4 else (1,) + tuple(shape)
    index = _plane_index(xp, shape4, flat.reshape((1,) * (4 - flat.ndim) + flat.shape))
    z = xp.zeros(shape4, dtype=g._data.dtype)
    xp.add_at(z, index, g._data.reshape(index[2].shape))
    # torch's node over (grad, self): under create_graph the gradient requires grad with the
    # input, its own gradient is the gather at the maxima, the input's zero
    return ADAPTIVE_MAX_POOL_BACKWARD.record(z.reshape(shape), (g, x), (index, flat.shape),
                                             self=x)


def _adaptive_max_bb(gg: Tensor, saved: Any, ctx: Any) -> Any:
    index, out_shape = ctx
    shape4 = (1,) * (4 - gg._data.ndim) + gg._data.shape
    picked = gg.reshape(shape4)[index].reshape(out_shape)
    return picked, const(gg._backend.zeros_like(saved.self._data))


ADAPTIVE_MAX_POOL = node("AdaptiveMaxPool2DBackward0", _adaptive_max_bw,
                         saved=("self", "result1"))
ADAPTIVE_MAX_POOL_BACKWARD = node("AdaptiveMaxPool2DBackwardBackward0", _adaptive_max_bb,
                                  saved=("self",))


def _output_pair(input: Tensor, output_size: Any) -> Tuple[int, int]:
    h, w = input.shape[-2], input.shape[-1]
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 2:
            raise RuntimeError("adaptive_max_pool2d(): internal error: output_size.size() must "
                               "be 2")
        return (h if output_size[0] is None else int(output_size[0]),
                w if output_size[1] is None else int(output_size[1]))
    return int(output_size), int(output_size)


@op(functional="adaptive_max_pool2d_with_indices",
    grad_fn=("AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool2DBackwardBackward0"))
def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    """The max over output_size bins of the last two dims, and each max's flat index in its
    (H, W) plane (bins as torch's adaptive pooling: they may overlap).

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> rustgrad.nn.functional.adaptive_max_pool2d_with_indices(x, 1)
        (tensor([[[[15.]]]]), tensor([[[[15]]]]))
    """
    xd = input._data
    if isinstance(output_size, (tuple, list)) and xd.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")
    if xd.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(xd.shape)}")
    for dim in range(1, xd.ndim):
        if xd.shape[dim] == 0:
            raise RuntimeError(
                "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch "
                f"dimensions, but input has sizes {list(xd.shape)} with dimension {dim} being "
                "empty")
    oh, ow = _output_pair(input, output_size)
    check_float(input, "adaptive_max_pool2d")
    xp = input._backend
    shape = tuple(xd.shape)
    if xd.ndim == 3:  # one sample, computed as a batch of one (one node, as torch's)
        xd = xd[None]
    n, c, h, w = xd.shape
    rows, rvalid = _adaptive_windows(xp, h, oh)  # (oh, KH)
    cols, cvalid = _adaptive_windows(xp, w, ow)  # (ow, KW)
    kh, kw = rows.shape[1], cols.shape[1]
    win = xd[:, :, rows.reshape(-1)][:, :, :, cols.reshape(-1)]  # (N, C, oh*KH, ow*KW)
    win = win.reshape(n, c, oh, kh, ow, kw).transpose(0, 1, 2, 4, 3, 5).reshape(
        n, c, oh, ow, kh * kw)
    valid = (rvalid[:, None, :, None] & cvalid[None, :, None, :]).reshape(oh, ow, kh * kw)
    win = xp.where(valid, win, xd.dtype.type(-math.inf))
    k = xp.argmax(win, axis=-1)
    vals = xp.ascontiguousarray(xp.take_along_axis(win, k[..., None], axis=-1)[..., 0])
    r = xp.take_along_axis(xp.broadcast_to(rows[:, None, :, None], (oh, ow, kh, kw)).reshape(
        1, 1, oh, ow, kh * kw), k[..., None], axis=-1)[..., 0]
    q = xp.take_along_axis(xp.broadcast_to(cols[None, :, None, :], (oh, ow, kh, kw)).reshape(
        1, 1, oh, ow, kh * kw), k[..., None], axis=-1)[..., 0]
    out_shape = shape[:-2] + (oh, ow)
    flat = (r * w + q).astype(_dtype.int64.np, copy=False).reshape(out_shape)
    idx = const(flat)
    out = ADAPTIVE_MAX_POOL.record(vals.reshape(out_shape), (input,), shape, self=input,
                                   result1=idx)
    return out, idx


@op(functional="adaptive_max_pool2d", grad_fn="AdaptiveMaxPool2DBackward0")
def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The max over output_size bins of the last two dims (and its flat index).

    Args:
        input (Tensor): (N, C, H, W) or (C, H, W).
        output_size (int or pair of ints): the output's (H, W); None keeps that dim's size.
        return_indices (bool, optional): also return each max's flat index in its (H, W)
            plane (for max_unpool2d). Default: False.

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> rustgrad.nn.functional.adaptive_max_pool2d(x, 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    res = adaptive_max_pool2d_with_indices(input, output_size)
    return res if return_indices else res[0]


@op(function="adaptive_max_pool1d", functional="adaptive_max_pool1d_with_indices",
    grad_fn="AdaptiveMaxPool2DBackward0")
def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,
                                     return_indices: bool = False) -> Tuple[Tensor, Tensor]:
    """The max over output_size bins of the last dim, and each max's index.

    Example::

        >>> x = rustgrad.tensor([[[1., 3., 2., 0.]]])
        >>> rustgrad.nn.functional.adaptive_max_pool1d_with_indices(x, 2)
        (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d(): Expected 2D or 3D tensor, but got: "
                           f"{list(input.shape)}")
    v, i = adaptive_max_pool2d_with_indices(input.unsqueeze(-2), (1, single(output_size)))
    return v.squeeze(-2), i.squeeze(-2)


@op(functional="adaptive_max_pool1d", grad_fn="AdaptiveMaxPool2DBackward0")
def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """The max over output_size bins of the last dim (and its index).

    Args:
        input (Tensor): (N, C, L) or (C, L).
        output_size (int): the output's length.
        return_indices (bool, optional): also return each max's index. Default: False.

    Example::

        >>> rustgrad.nn.functional.adaptive_max_pool1d(rustgrad.tensor([[1., 3., 2., 0.]]), 2)
        tensor([[3., 2.]])
    """
    res = adaptive_max_pool1d_with_indices(input, output_size)
    return res if return_indices else res[0]


# ---- power-average pooling ----------------------------------------------------------------
def lp_pool_nd(input: Tensor, norm_type: float, kernel_size: Any, stride: Any, ceil_mode: bool,
               count: int, max_pool: Any, avg_pool: Any) -> Tensor:
    """(count * mean of x^p over each window)^(1/p) through the dims' average pooling (the
    maximum of |x| at p = inf, minus the maximum of -|x| at p = -inf), as torch's lp_poolNd."""
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == math.inf:  # the largest magnitude in each window
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:  # the smallest magnitude
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    pooled = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # (count * mean of x^p)^(1/p); a negative mean (odd p) keeps its sign, so the root is NaN
    # as torch's, and a zero mean passes no gradient through |.|
    return (pooled.sign() * pooled.abs().relu() * count).pow(1.0 / norm_type)


@op(functional="lp_pool2d", grad_fn="PowBackward0")
def lp_pool2d(input: Tensor, norm_type: float, kernel_size: IntOrPair,
              stride: Optional[IntOrPair] = None, ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window of (N, C, H, W) or (C, H, W) input: (sum x^p)^(1/p).

    Args:
        norm_type (float): p (not 0); inf gives max pooling of |x|, -inf min pooling of |x|.
        kernel_size (int or pair of ints): the window's size.
        stride (int or pair of ints, optional): the step between windows. Default: kernel_size.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.

    Example::

        >>> x = rustgrad.tensor([[[[3., 4.], [0., 0.]]]])
        >>> rustgrad.nn.functional.lp_pool2d(x, 2, 2)
        tensor([[[[5.]]]])
    """
    kh, kw = pair(kernel_size)
    return lp_pool_nd(input, norm_type, (kh, kw), stride, ceil_mode, kh * kw, max_pool2d,
                      avg_pool2d)


@op(functional="lp_pool1d", grad_fn="PowBackward0")
def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int,
              stride: Optional[IntOrPair] = None, ceil_mode: bool = False) -> Tensor:
    """The p-norm of each window of (N, C, L) or (C, L) input: (sum x^p)^(1/p).

    Args:
        norm_type (float): p (not 0); inf gives max pooling of |x|, -inf min pooling of |x|.
        kernel_size (int): the window's size.
        stride (int, optional): the step between windows. Default: kernel_size.
        ceil_mode (bool, optional): round the output size up instead of down. Default: False.

    Example::

        >>> rustgrad.nn.functional.lp_pool1d(rustgrad.tensor([[3., 4., 1., 0.]]), 2, 2)
        tensor([[5., 1.]])
    """
    k = single(kernel_size)
    return lp_pool_nd(input, norm_type, k, stride, ceil_mode, k, max_pool1d, avg_pool1d)


# ---- embedding_bag: embedding rows pooled by bag ------------------------------------------
_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def _embedding_bag_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mode, shape, idx, bag, rows_scale, max_rows, has_psw, psw_shape, keep, length = ctx
    w = saved.weight
    xp = g._backend
    if mode == "max":
        b, d = max_rows.shape
        filled = max_rows >= 0  # an empty bag passes nothing
        cols = xp.broadcast_to(xp.arange(d).reshape(1, d), (b, d))
        gw = index_into_zeros(g[(xp.nonzero(filled))], shape,
                              (max_rows[filled], cols[filled]), True)
        return gw
    gb = g[(bag,)]  # each kept entry's bag's gradient, (K, D)
    rows = gb if rows_scale is None else gb * const(rows_scale.reshape(-1, 1))
    psw = saved.per_sample_weights if has_psw else None
    if psw is not None:
        picked = psw.reshape(-1)[(const(keep.nonzero()[0]),)]
        rows = rows * picked.reshape(-1, 1)
    gw = index_into_zeros(rows, shape, (idx,), True)
    if psw is None:
        return gw
    gp = (gb * w[(idx,)]).sum(1)
    gp = index_into_zeros(gp, (length,), (keep.nonzero()[0],), False).reshape(psw_shape)
    return gw, gp


EMBEDDING_BAG = node("EmbeddingBagBackward0", _embedding_bag_bw,
                     saved=("weight", "per_sample_weights"),
                     getters={"mode": lambda s, c: _BAG_MODES[c[0]]})


def _bag_offsets(input: Tensor, offsets: Optional[Tensor],
                 per_sample_weights: Optional[Tensor]) -> Tuple[Any, Any]:
    """(flat indices, offsets) arrays: a 2-D input is one bag per row."""
    xd = input._data
    if xd.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}")
        xp = input._backend
        return xd.reshape(-1), xp.arange(0, xd.size, xd.shape[1] or 1)[:xd.shape[0]]
    if xd.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        return xd, offsets._data
    raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {xd.ndim}")


@op(functional="embedding_bag", grad_fn="EmbeddingBagBackward0")
def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None,
                  max_norm: Optional[float] = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None, include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """The sums, means or maxima of bags of embedding rows, without materializing the rows.

    Args:
        input (Tensor): int64 row indices: (B, N), one bag per row, or (L,) with offsets.
        weight (Tensor): the embedding matrix (num_embeddings, embedding_dim).
        offsets (Tensor, optional): for a 1-D input, where each bag starts (the first is 0).
        max_norm (float, optional): rows used with a larger norm are rescaled to it, in place.
        norm_type (float, optional): the p of max_norm's norm. Default: 2.
        scale_grad_by_freq (bool, optional): divide each row's gradient by how often it occurs
            in input. Default: False.
        mode (str, optional): "sum", "mean" or "max". Default: "mean".
        sparse (bool, optional): sparse gradients (not supported). Default: False.
        per_sample_weights (Tensor, optional): input's shape, multiplying each row (mode
            "sum" only).
        include_last_offset (bool, optional): offsets has one more entry, the end of the
            last bag. Default: False.
        padding_idx (int, optional): a row that is left out of every bag.

    An empty bag gives zeros.

    Example::

        >>> w = rustgrad.tensor([[1., 1.], [2., 2.], [3., 3.]])
        >>> rustgrad.nn.functional.embedding_bag(rustgrad.tensor([0, 1, 2]), w,
        ...                                      rustgrad.tensor([0, 2]), mode="sum")
        tensor([[3., 3.],
                [3., 3.]])
    """
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    idx_all, offs = _bag_offsets(input, offsets, per_sample_weights)
    if mode not in _BAG_MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
            "GitHub.")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported")
    wd = weight._data
    n, d = wd.shape
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{n} "
                               f"through {n - 1}, but got {padding_idx}")
        padding_idx = padding_idx + n if padding_idx < 0 else padding_idx
    else:
        padding_idx = -1
    for name, a, arg in (("indices", idx_all, 1), ("offsets", offs, 2)):
        if a.dtype.kind not in "iu":
            raise RuntimeError(
                f"Expected tensor for argument #{arg} '{name}' to have one of the following "
                f"scalar types: Long, Int; but got "
                f"torch.{_dtype.LEGACY_NAMES[_dtype.from_np(a.dtype).name]} instead (while "
                "checking arguments for embedding_bag)")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        names = [f"torch.{_dtype.LEGACY_NAMES[t.dtype.name]}" for t in (weight, per_sample_weights)]
        raise RuntimeError(
            "Expected tensor for argument #1 'weight' to have the same type as tensor for "
            f"argument #1 'per_sample_weights'; but type {names[0]} does not equal {names[1]} "
            "(while checking arguments for embedding_bag)")
    xp = weight._backend
    length = idx_all.size
    if offs.size and int(offs[0]) != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offs[0])}")
    if offs.size and int(offs[-1]) > length:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {length} but "
                           f"got offsets[-1] of {int(offs[-1])}")
    bad = (idx_all < 0) | (idx_all >= n)
    if bool(bad.any()):
        at = int(xp.nonzero(bad)[0][0])
        raise RuntimeError(f"Index {at} of input takes value {int(idx_all[at])} which is not in "
                           f"the valid range [0, {n})")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
        wd = weight._data
    # the last bag runs to the end of input (with include_last_offset, offsets[-1] should be
    # input's length: torch's float64 kernel reads on to the end, as here)
    starts = offs[:-1] if include_last_offset else offs
    b = starts.size
    ends = xp.concatenate([starts[1:], xp.asarray([length], dtype=offs.dtype)])
    pos = xp.arange(length)
    bag_all = xp.searchsorted(starts, pos, side="right") - 1
    bag_safe = xp.clip(bag_all, 0, max(b - 1, 0))
    keep = (bag_all >= 0) & (pos < ends[bag_safe]) & (idx_all != padding_idx) if b else \
        xp.zeros(length, dtype=bool)
    kpos = xp.nonzero(keep)[0]
    idx = idx_all[kpos].astype(_dtype.int64.np, copy=False)
    bag = bag_all[kpos]
    rows = wd[idx]
    rows_scale = None
    max_rows = None
    if mode == "max":
        width = int((ends - starts).max()) if b else 0
        mat = xp.full((b, max(width, 1), d), -math.inf, dtype=wd.dtype)
        which = xp.full((b, max(width, 1)), -1, dtype=_dtype.int64.np)
        slot = pos[kpos] - starts[bag]
        mat[bag, slot] = rows
        which[bag, slot] = idx
        k = xp.argmax(mat, axis=1)  # (B, D)
        out = xp.take_along_axis(mat, k[:, None, :], axis=1)[:, 0, :]
        max_rows = xp.take_along_axis(which, k, axis=1)
        out = xp.where(max_rows >= 0, out, 0).astype(wd.dtype, copy=False)
    else:
        if per_sample_weights is not None:
            rows = rows * per_sample_weights._data.reshape(-1)[kpos][:, None]
        out = xp.zeros((b, d), dtype=wd.dtype)
        xp.add_at(out, (bag,), rows)
        if mode == "mean":
            counts = xp.bincount(bag, minlength=b)[:b] if bag.size else xp.zeros(b, dtype=int)
            out = (out / xp.maximum(counts, 1)[:, None]).astype(wd.dtype, copy=False)
            rows_scale = 1.0 / counts[bag]
    if scale_grad_by_freq and idx.size:
        freq = xp.bincount(idx, minlength=n)[idx]
        rows_scale = 1.0 / freq if rows_scale is None else rows_scale / freq
    if rows_scale is not None:
        rows_scale = rows_scale.astype(wd.dtype)
    psw = per_sample_weights
    inputs = (weight,) if psw is None else (weight, psw)
    ctx = (mode, wd.shape, idx, bag, rows_scale, max_rows, psw is not None,
           None if psw is None else tuple(psw.shape), keep, length)
    return EMBEDDING_BAG.record(xp.ascontiguousarray(out), inputs, ctx, weight=weight,
                                per_sample_weights=psw)
