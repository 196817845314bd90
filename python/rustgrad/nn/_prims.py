"""The differentiable primitives behind nn.functional: forward on the device's arrays (through
`t._backend`, never numpy directly), backward formulas written in rustgrad ops so that double
backward works, grad_fn names as torch's.

Each primitive records one node with `rustgrad._core.record`. Array helpers (`_im2col`,
`_col2im`) are shared by convolution, unfold/fold and pooling.
"""

from __future__ import annotations

import math
from contextlib import nullcontext as _nullcontext
from typing import Any, Optional, Sequence, Tuple

from .. import _core, _dtype
from .._ops._util import sum_to
from .._ops.indexing import index_into_zeros
from .._ops.pointwise import _erf_array, erf
from .._ops.select import where
from .._tensor import Tensor, _wrap_dim

record = _core.record
Pads = Tuple[int, int, int, int]  # top, bottom, left, right


def const(array: Any) -> Tensor:
    """A tensor around an array that never requires grad (a constant of a formula)."""
    return record(array, (), "", None)


def _needs(*ts: Any) -> Tuple[bool, ...]:
    return tuple(isinstance(t, Tensor) and t.requires_grad for t in ts)


def _type_name(t: Tensor) -> str:
    return {"float16": "Half", "float32": "Float", "float64": "Double", "int64": "Long",
            "int32": "Int", "bool": "Bool"}.get(t.dtype.name, t.dtype.name)


def _check_float(t: Tensor, what: str) -> None:
    if t._data.dtype.kind not in "fc":
        raise RuntimeError(f'"{what}" not implemented for \'{_type_name(t)}\'')


def _same_dtype(a: Tensor, b: Tensor, msg: str) -> None:
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(msg.format(_type_name(a), _type_name(b)))


def _unsafe_view_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.reshape(ctx)


# ---- linear -------------------------------------------------------------------------------
def _addmm_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # inputs as torch's addmm(bias, x, w.t()): the last gradient is the one of w.t()
    x, w = saved
    nx, nw, nb, has_bias = ctx
    gx = g @ w if nx else None
    gwt = x.t() @ g if nw else None
    if not has_bias:
        return gx, gwt
    gb = g.sum(0) if nb else None
    return gb, gx, gwt


def linear(x: Tensor, w: Tensor, b: Optional[Tensor] = None) -> Tensor:
    """x @ w.T + b with torch's graph: AddmmBackward0(bias, x, TBackward0(w)) (MmBackward0
    without bias) for 2-D input, the batch dims folded in and out by views otherwise."""
    xd = x._data
    if xd.ndim != 2:
        if xd.ndim == 1:
            if b is not None:
                return linear(x.view(1, -1), w, b).view(-1)
            return linear(x.unsqueeze(0), w, b).squeeze(0)
        lead = xd.shape[:-1]
        out = linear(x.reshape(-1, xd.shape[-1]), w, b)
        shape = lead + (out._data.shape[-1],)
        if b is not None:
            return out.view(shape)
        # torch's matmul folds the batch dims and ends on _unsafe_view
        return record(out._data.reshape(shape), (out,), "UnsafeViewBackward0", _unsafe_view_bw,
                      None, out._data.shape)
    wd = w._data
    if xd.shape[1] != wd.shape[-1]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({xd.shape[0]}x{xd.shape[1]} and "
            f"{wd.shape[-1]}x{wd.shape[0]})"
        )
    if b is None and xd.dtype != wd.dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: "
            f"{_type_name(x).lower()} != {_type_name(w).lower()}"
        )
    _same_dtype(x, w, "mat1 and mat2 must have the same dtype, but got {} and {}")
    out = xd @ wd.T
    wt = w.t() if w.requires_grad and _core.is_grad_enabled() else w
    if b is None:
        return record(out, (x, wt), "MmBackward0", _addmm_bw, (x, w),
                      (x.requires_grad, w.requires_grad, False, False))
    _same_dtype(b, x, "self and mat2 must have the same dtype, but got {} and {}")
    out += b._data
    return record(out, (b, x, wt), "AddmmBackward0", _addmm_bw, (x, w),
                  (x.requires_grad, w.requires_grad, b.requires_grad, True))


# ---- im2col / col2im on arrays ------------------------------------------------------------
def _out_size(n: int, k: int, d: int, s: int, p_lo: int, p_hi: int) -> int:
    return (n + p_lo + p_hi - d * (k - 1) - 1) // s + 1


def _pad_array(xp: Any, x: Any, pads: Pads, fill: float) -> Any:
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _im2col(xp: Any, x: Any, k: Tuple[int, int], d: Tuple[int, int], pads: Pads,
            s: Tuple[int, int], fill: float = 0.0, channels_first: bool = False) -> Any:
    """(N, C, H, W) -> (N, C, kh, kw, OH, OW): the window elements of every output position;
    channels_first gives (C, kh, kw, N, OH, OW), whose (C*kh*kw, N*OH*OW) reshape feeds one
    GEMM."""
    n, c, h, w = x.shape
    kh, kw = k
    oh = _out_size(h, kh, d[0], s[0], pads[0], pads[1])
    ow = _out_size(w, kw, d[1], s[1], pads[2], pads[3])
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
            "Output size is too small"
        )
    xpad = _pad_array(xp, x, pads, fill)
    if channels_first:
        xpad = xpad.transpose(1, 0, 2, 3)
        cols = xp.empty((c, kh, kw, n, oh, ow), dtype=x.dtype)
    else:
        cols = xp.empty((n, c, kh, kw, oh, ow), dtype=x.dtype)
    hs, ws = s[0] * (oh - 1) + 1, s[1] * (ow - 1) + 1
    for i in range(kh):
        hi = i * d[0]
        for j in range(kw):
            wj = j * d[1]
            window = xpad[:, :, hi:hi + hs:s[0], wj:wj + ws:s[1]]
            if channels_first:
                cols[:, i, j] = window
            else:
                cols[:, :, i, j] = window
    return cols


def _col2im(xp: Any, cols: Any, size: Tuple[int, int], d: Tuple[int, int], pads: Pads,
            s: Tuple[int, int], channels_first: bool = False) -> Any:
    """The adjoint of _im2col: (N, C, kh, kw, OH, OW) (or channels_first's (C, kh, kw, N, OH,
    OW)) -> (N, C, H, W), overlaps summed."""
    if channels_first:
        c, kh, kw, n, oh, ow = cols.shape
    else:
        n, c, kh, kw, oh, ow = cols.shape
    h, w = size
    pt, pb, pl, pr = pads
    shape = (c, n) if channels_first else (n, c)
    out = xp.zeros(shape + (h + pt + pb, w + pl + pr), dtype=cols.dtype)
    hs, ws = s[0] * (oh - 1) + 1, s[1] * (ow - 1) + 1
    for i in range(kh):
        hi = i * d[0]
        for j in range(kw):
            wj = j * d[1]
            out[:, :, hi:hi + hs:s[0], wj:wj + ws:s[1]] += \
                cols[:, i, j] if channels_first else cols[:, :, i, j]
    out = out[:, :, pt:pt + h, pl:pl + w]
    if channels_first:
        out = out.transpose(1, 0, 2, 3)
    return xp.ascontiguousarray(out)


def _pair(v: Any, name: str = "") -> Tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return int(v[0]), int(v[0])
        return int(v[0]), int(v[1])
    return int(v), int(v)


# ---- unfold / fold (torch's im2col / col2im layout (N, C*kh*kw, L)) ---------------------------
def _unfold_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    size, k, d, p, s = ctx
    return fold(g, size, k, d, p, s)


def unfold(x: Tensor, k: Tuple[int, int], d: Tuple[int, int], p: Tuple[int, int],
           s: Tuple[int, int]) -> Tensor:
    xd = x._data
    n, c, h, w = xd.shape
    cols = _im2col(x._backend, xd, k, d, (p[0], p[0], p[1], p[1]), s)
    out = cols.reshape(n, c * k[0] * k[1], cols.shape[4] * cols.shape[5])
    return record(out, (x,), "Im2ColBackward0", _unfold_bw, None, ((h, w), k, d, p, s))


def _fold_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    size, k, d, p, s = ctx
    return unfold(g, k, d, p, s)


def fold(cols: Tensor, size: Tuple[int, int], k: Tuple[int, int], d: Tuple[int, int],
         p: Tuple[int, int], s: Tuple[int, int]) -> Tensor:
    cd = cols._data
    n, ck, L = cd.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={ck} and kernel_size=({k[0]}, {k[1]})."
        )
    c = ck // kk
    oh = _out_size(size[0], k[0], d[0], s[0], p[0], p[0])
    ow = _out_size(size[1], k[1], d[1], s[1], p[1], p[1])
    if oh * ow != L:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), "
            f"expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={L}."
        )
    out = _col2im(cols._backend, cd.reshape(n, c, k[0], k[1], oh, ow), size, d,
                  (p[0], p[0], p[1], p[1]), s)
    return record(out, (cols,), "Col2ImBackward0", _fold_bw,
                  None, (size, k, d, p, s))


# ---- conv2d ------------------------------------------------------------------------------
# The convolution's backward uses a private unfold/fold pair in the channels-first layout
# (C*kh*kw, N*OH*OW), so that both weight and input gradients are single GEMMs.
def _unfold_cf_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _fold_cf(g, *ctx)


def _unfold_cf(x: Tensor, k: Tuple[int, int], d: Tuple[int, int], p: Tuple[int, int],
               s: Tuple[int, int]) -> Tensor:
    xd = x._data
    cols = _im2col(x._backend, xd, k, d, (p[0], p[0], p[1], p[1]), s, channels_first=True)
    c, n = xd.shape[1], xd.shape[0]
    out = cols.reshape(c * k[0] * k[1], n * cols.shape[4] * cols.shape[5])
    return record(out, (x,), "Im2ColBackward0", _unfold_cf_bw, None,
                  (xd.shape, k, d, p, s, cols.shape[4], cols.shape[5]))


def _fold_cf_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, k, d, p, s = ctx
    return _unfold_cf(g, k, d, p, s)


def _fold_cf(cols: Tensor, shape: Tuple[int, ...], k: Tuple[int, int], d: Tuple[int, int],
             p: Tuple[int, int], s: Tuple[int, int], oh: int, ow: int) -> Tensor:
    n, c, h, w = shape
    c6 = cols._data.reshape(c, k[0], k[1], n, oh, ow)
    out = _col2im(cols._backend, c6, (h, w), d, (p[0], p[0], p[1], p[1]), s,
                  channels_first=True)
    return record(out, (cols,), "Col2ImBackward0", _fold_cf_bw, None, (shape, k, d, p, s))


def _conv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved
    xshape, (o, cg, kh, kw), groups, d, p, s, needs, has_bias = ctx
    gx = gw = gb = None
    nx, nw, nb = needs
    n = xshape[0]
    oh, ow = g._data.shape[2], g._data.shape[3]
    nl = n * oh * ow
    ckg = cg * kh * kw
    og = o // groups
    g2 = g.permute(1, 0, 2, 3).reshape(o, nl)
    if nw:
        cols = _unfold_cf(x, (kh, kw), d, p, s)  # (C*K, N*L)
        if groups == 1:
            gw = (g2 @ cols.t()).reshape(o, cg, kh, kw)
        else:
            gw = (g2.reshape(groups, og, nl) @ cols.reshape(groups, ckg, nl).transpose(1, 2))
            gw = gw.reshape(o, cg, kh, kw)
    if nx:
        if groups == 1:
            gcols = w.reshape(o, ckg).t() @ g2
        else:
            gcols = w.reshape(groups, og, ckg).transpose(1, 2) @ g2.reshape(groups, og, nl)
            gcols = gcols.reshape(groups * ckg, nl)
        gx = _fold_cf(gcols, xshape, (kh, kw), d, p, s, oh, ow)
    if nb:
        gb = g.sum((0, 2, 3))
    return (gx, gw, gb) if has_bias else (gx, gw)


def conv2d(x: Tensor, w: Tensor, b: Optional[Tensor], stride: Any, padding: Any,
           dilation: Any, groups: int) -> Tensor:
    xd, wd = x._data, w._data
    if xd.ndim == 3:
        return conv2d(x.unsqueeze(0), w, b, stride, padding, dilation, groups).squeeze(0)
    if xd.ndim != 4:
        raise RuntimeError(
            f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            f"{list(xd.shape)}"
        )
    _same_dtype(x, w, "expected scalar type {} but found {}")
    n, c, h, wdt = xd.shape
    o, cg, kh, kw = wd.shape
    if cg * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {list(wd.shape)}, expected input"
            f"{list(xd.shape)} to have {cg * groups} channels, but got {c} channels instead"
        )
    if o % groups:
        raise RuntimeError("out_channels must be divisible by groups")
    s, d = _pair(stride), _pair(dilation)
    if isinstance(padding, str):
        if padding == "valid":
            p = (0, 0)
        elif padding == "same":
            if s != (1, 1):
                raise ValueError("padding='same' is not supported for strided convolutions")
            tot = (d[0] * (kh - 1), d[1] * (kw - 1))
            if tot[0] % 2 or tot[1] % 2:
                xpad = pad(x, (tot[1] // 2, tot[1] - tot[1] // 2, tot[0] // 2,
                               tot[0] - tot[0] // 2))
                return conv2d(xpad, w, b, 1, 0, d, groups)
            p = (tot[0] // 2, tot[1] // 2)
        else:
            raise ValueError(f"Invalid padding string '{padding}'")
    else:
        p = _pair(padding)
    xp = x._backend
    cols = _im2col(xp, xd, (kh, kw), d, (p[0], p[0], p[1], p[1]), s, channels_first=True)
    oh, ow = cols.shape[4], cols.shape[5]
    ckg = cg * kh * kw
    cols2 = cols.reshape(c * kh * kw, n * oh * ow)
    if groups == 1:
        out = wd.reshape(o, ckg) @ cols2
    else:
        og = o // groups
        out = xp.matmul(wd.reshape(groups, og, ckg), cols2.reshape(groups, ckg, -1))
    out = xp.ascontiguousarray(out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3))
    if b is not None:
        out += b._data.reshape(1, o, 1, 1)
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (xd.shape, (o, cg, kh, kw), groups, d, p, s, needs, b is not None)
    return record(out, inputs, "ConvolutionBackward0", _conv_bw, (x, w), ctx)


# ---- padding ------------------------------------------------------------------------------
def _pad_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g[ctx]


def pad(x: Tensor, pads: Sequence[int], mode: str = "constant", value: Any = None) -> Tensor:
    """F.pad: pads are (last_lo, last_hi, second_last_lo, ...), negative values crop."""
    xd = x._data
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > xd.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension")
    pairs = [(int(pads[2 * i]), int(pads[2 * i + 1])) for i in range(len(pads) // 2)]
    nd = xd.ndim
    if mode != "constant":
        return _pad_index(x, pairs, mode)
    crop = [slice(None)] * nd
    shape = list(xd.shape)
    place = [slice(None)] * nd
    for i, (lo, hi) in enumerate(pairs):
        dim = nd - 1 - i
        size = shape[dim]
        crop[dim] = slice(max(-lo, 0), size - max(-hi, 0))
        new = size + lo + hi
        if new < 0:
            raise RuntimeError(
                f"The input size {size}, plus negative padding {lo} and {hi} resulted in a "
                f"negative output size, which is invalid. Check dimension {dim} of your input."
            )
        shape[dim] = new
        place[dim] = slice(max(lo, 0), max(lo, 0) + size - max(-lo, 0) - max(-hi, 0))
    xp = x._backend
    out = xp.full(tuple(shape), 0 if value is None else value, dtype=xd.dtype)
    out[tuple(place)] = xd[tuple(crop)]
    # backward: the gradient of the kept part, zeros where input was cropped
    return record(out, (x,), "ConstantPadNdBackward0", _pad_bw_full, None,
                  (tuple(place), tuple(crop), xd.shape))


def _pad_bw_full(g: Tensor, saved: Any, ctx: Any) -> Any:
    place, crop, shape = ctx
    piece = g[place]
    if all(c == slice(None) or c.indices(n) == (0, n, 1) for c, n in zip(crop, shape)):
        return piece
    return pad(piece, _pads_from_crop(crop, shape))


def _pads_from_crop(crop: Tuple[slice, ...], shape: Tuple[int, ...]) -> list:
    pads = []
    for dim in reversed(range(len(shape))):
        start, stop, _ = crop[dim].indices(shape[dim])
        pads += [start, shape[dim] - stop]
    return pads


def _pad_index(x: Tensor, pairs: list, mode: str) -> Tensor:
    xp = x._backend
    nd = x._data.ndim
    out = x
    for i, (lo, hi) in enumerate(pairs):
        if lo == 0 and hi == 0:
            continue
        dim = nd - 1 - i
        n = x._data.shape[dim]
        pos = xp.arange(-lo, n + hi)
        if mode == "reflect":
            if lo >= n or hi >= n:
                raise RuntimeError(
                    f"Argument #4: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({lo}, {hi}) at dimension {dim} of input "
                    f"{list(x._data.shape)}"
                )
            period = 2 * (n - 1) if n > 1 else 1
            m = xp.mod(pos, period)
            idx = xp.where(m >= n, period - m, m)
        elif mode == "replicate":
            idx = xp.clip(pos, 0, n - 1)
        elif mode == "circular":
            idx = xp.mod(pos, n)
        else:
            raise NotImplementedError(f"padding mode '{mode}' is not supported")
        out = out[(slice(None),) * dim + (const(idx.astype(_dtype.int64.np)),)]
    return out


# ---- pooling ------------------------------------------------------------------------------
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


def _max_pool_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx, overlap = ctx
    # windows that do not overlap pick distinct elements: plain assignment, no scatter-add
    return index_into_zeros(g, shape, idx, overlap)


def max_pool2d(x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool, return_indices: bool) -> Any:
    xd = x._data
    if xd.ndim == 3:
        res = max_pool2d(x.unsqueeze(0), kernel_size, stride, padding, dilation, ceil_mode,
                         return_indices)
        return (res[0].squeeze(0), res[1].squeeze(0)) if return_indices else res.squeeze(0)
    _check_float(x, "max_pool2d")
    k = _pair(kernel_size)
    s = _pair(stride if stride is not None and stride != [] else kernel_size)
    p, d = _pair(padding), _pair(dilation)
    n, c, h, w = xd.shape
    oh, eh = _pool_geometry(h, k[0], s[0], p[0], d[0], ceil_mode)
    ow, ew = _pool_geometry(w, k[1], s[1], p[1], d[1], ceil_mode)
    xp = x._backend
    if s == k and p == (0, 0) and d == (1, 1) and oh * k[0] == h and ow * k[1] == w:
        # tiling windows: a reshape gives them without copying the input into columns
        cols = xd.reshape(n, c, oh, k[0], ow, k[1]).transpose(0, 1, 3, 5, 2, 4)
    else:
        cols = _im2col(xp, xd, k, d, (p[0], p[0] + eh, p[1], p[1] + ew), s, -math.inf)
    cols = cols.reshape(n, c, k[0] * k[1], oh, ow)
    kidx = xp.argmax(cols, axis=2)
    vals = xp.ascontiguousarray(xp.take_along_axis(cols, kidx[:, :, None], axis=2)[:, :, 0])
    ki, kj = kidx // k[1], kidx % k[1]
    hh = xp.arange(oh).reshape(1, 1, oh, 1) * s[0] - p[0] + ki * d[0]
    ww = xp.arange(ow).reshape(1, 1, 1, ow) * s[1] - p[1] + kj * d[1]
    idx = (xp.arange(n).reshape(n, 1, 1, 1), xp.arange(c).reshape(1, c, 1, 1), hh, ww)
    overlap = s[0] < d[0] * (k[0] - 1) + 1 or s[1] < d[1] * (k[1] - 1) + 1
    out = record(vals, (x,), "MaxPool2DWithIndicesBackward0", _max_pool_bw, None,
                 (xd.shape, idx, overlap))
    if return_indices:
        return out, const((hh * w + ww).astype(_dtype.int64.np))
    return out


def _avg_pool_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, k, pads, s, div = ctx
    n, c, h, w = shape
    oh, ow = g._data.shape[2], g._data.shape[3]
    gd = g / const(div) if div.ndim else g / float(div)
    cols = gd.reshape(n * c, 1, oh * ow).expand(n * c, k[0] * k[1], oh * ow)
    pt, pb, pl, pr = pads
    full = fold(cols, (h + pt + pb, w + pl + pr), k, (1, 1), (0, 0), s)
    return full[:, :, pt:pt + h, pl:pl + w].reshape(n, c, h, w)


def avg_pool2d(x: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool, divisor_override: Optional[int],
               name: str = "AvgPool2DBackward0") -> Tensor:
    xd = x._data
    if xd.ndim == 3:
        return avg_pool2d(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override, name).squeeze(0)
    _check_float(x, "avg_pool2d")
    k = _pair(kernel_size)
    s = _pair(stride if stride is not None and stride != [] else kernel_size)
    p = _pair(padding)
    n, c, h, w = xd.shape
    oh, eh = _pool_geometry(h, k[0], s[0], p[0], 1, ceil_mode)
    ow, ew = _pool_geometry(w, k[1], s[1], p[1], 1, ceil_mode)
    pads = (p[0], p[0] + eh, p[1], p[1] + ew)
    xp = x._backend
    cols = _im2col(xp, xd, k, (1, 1), pads, s)
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
    return record(out, (x,), name, _avg_pool_bw, None,
                  (xd.shape, k, pads, s, div))


# ---- softmax family -----------------------------------------------------------------------
def _softmax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return out * (g - (g * out).sum(ctx, keepdim=True))


def softmax(x: Tensor, dim: int) -> Tensor:
    _check_float(x, "softmax_lastdim_kernel_impl")
    xd = x._data
    dim = _wrap_dim(dim, xd.ndim)
    xp = x._backend
    ax = dim if xd.ndim else None
    e = xp.exp(xd - xd.max(axis=ax, keepdims=True))
    out = e / e.sum(axis=ax, keepdims=True)
    return record(out, (x,), "SoftmaxBackward0", _softmax_bw, (), dim, True)


def safe_softmax(x: Tensor, dim: int) -> Tensor:
    """torch's _safe_softmax (scaled_dot_product_attention): softmax, with rows whose entries
    are all -inf giving 0 instead of NaN, in value and gradient."""
    _check_float(x, "softmax_lastdim_kernel_impl")
    xd = x._data
    dim = _wrap_dim(dim, xd.ndim)
    xp = x._backend
    mx = xd.max(axis=dim, keepdims=True)
    dead = mx == -math.inf
    e = xp.exp(xd - xp.where(dead, 0, mx))
    s = e.sum(axis=dim, keepdims=True)
    out = xp.where(dead, 0, e / xp.where(dead, 1, s)).astype(xd.dtype, copy=False)
    return record(out, (x,), "SafeSoftmaxBackward0", _softmax_bw, (), dim, True)


def _log_softmax_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g - out.exp() * g.sum(ctx, keepdim=True)


def log_softmax(x: Tensor, dim: int) -> Tensor:
    _check_float(x, "log_softmax_lastdim_kernel_impl")
    xd = x._data
    dim = _wrap_dim(dim, xd.ndim)
    xp = x._backend
    ax = dim if xd.ndim else None
    z = xd - xd.max(axis=ax, keepdims=True)
    out = z - xp.log(xp.exp(z).sum(axis=ax, keepdims=True))
    return record(out, (x,), "LogSoftmaxBackward0", _log_softmax_bw, (), dim, True)


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


def nll_loss(x: Tensor, target: Tensor, weight: Optional[Tensor], ignore_index: int,
             reduction: str) -> Tensor:
    xd, td = x._data, target._data
    xp = x._backend
    if td.dtype.kind != "u" and td.dtype != _dtype.int64.np:
        raise RuntimeError(f"expected scalar type Long but found {_type_name(target)}")
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
    valid = t1 != ignore_index
    if bool(((t1 < 0) | (t1 >= c))[valid].any()):
        bad = t1[valid & ((t1 < 0) | (t1 >= c))][0]
        raise IndexError(f"Target {int(bad)} is out of bounds.")
    tsafe = xp.where(valid, t1, 0)
    rows = xp.arange(x2.shape[0])
    picked = x2[rows, tsafe]
    w = weight._data[tsafe] if weight is not None else xp.ones(t1.shape, dtype=xd.dtype)
    w = xp.where(valid, w, 0).astype(xd.dtype, copy=False)
    losses = -picked * w
    if reduction == "none":
        out = losses.reshape(out_shape)
        coef = -w
    elif reduction == "sum":
        out = xp.asarray(losses.sum(), dtype=xd.dtype)
        coef = -w
    elif reduction == "mean":
        total = w.sum()
        errstate = getattr(xp, "errstate", None)
        with errstate(invalid="ignore", divide="ignore") if errstate else _nullcontext():
            out = xp.asarray(losses.sum() / total, dtype=xd.dtype)  # nan if all ignored
            coef = (-w / total).astype(xd.dtype, copy=False)
    else:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    ctx = (x2.shape, (rows, tsafe), coef, reduction, perm, xd.shape)
    name = "NllLoss2DBackward0" if xd.ndim == 4 else "NllLossBackward0"
    return record(out, (x,), name, _nll_bw, None, ctx)


# ---- pointwise losses ---------------------------------------------------------------------
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


def _pair_grads(gl: Tensor, ctx: Any) -> Any:
    shapes, needs = ctx
    ga = sum_to(gl, shapes[0]) if needs[0] else None
    gb = sum_to(-gl, shapes[1]) if needs[1] else None
    return ga, gb


def _bshape(a: Tensor, b: Tensor) -> None:
    if a._data.shape != b._data.shape:
        import warnings

        warnings.warn(
            f"Using a target size ({b.shape}) that is different to the input size ({a.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they "
            "have the same size.", UserWarning, stacklevel=4)
        import numpy as np

        from .._ops._util import broadcast_error

        try:
            np.broadcast_shapes(a._data.shape, b._data.shape)
        except ValueError as e:
            raise broadcast_error(e, a._data.shape, b._data.shape) from None


def _mse_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    reduction = ctx[0]
    return _pair_grads(_reduce_grad(g, (a - b) * 2, reduction), ctx[1:])


def mse_loss(a: Tensor, b: Tensor, reduction: str) -> Tensor:
    _bshape(a, b)
    d = a._data - b._data
    out = _reduce_array(a._backend, d * d, reduction)
    ctx = (reduction, (a._data.shape, b._data.shape), _needs(a, b))
    return record(out, (a, b), "MseLossBackward0", _mse_bw, (a, b), ctx)


def _smooth_l1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    reduction, beta, huber = ctx[0]
    diff = a - b
    if beta == 0:
        local = diff.sign()
    elif huber:
        local = diff.clamp(-beta, beta)
    else:
        local = diff.clamp(-beta, beta) / beta
    return _pair_grads(_reduce_grad(g, local, reduction), ctx[1:])


def smooth_l1_loss(a: Tensor, b: Tensor, reduction: str, beta: float, huber: bool) -> Tensor:
    _bshape(a, b)
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
    name = "HuberLossBackward0" if huber else "SmoothL1LossBackward0"
    ctx = ((reduction, beta, huber), (a._data.shape, b._data.shape), _needs(a, b))
    return record(out, (a, b), name, _smooth_l1_bw, (a, b), ctx)


def _bce_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, t, w = saved
    reduction, has_w = ctx
    local = (x - t) / ((1 - x) * x).clamp(min=1e-12)
    if has_w:
        local = local * w
    gx = _reduce_grad(g, local, reduction)
    return (gx, None, None) if has_w else (gx, None)


def binary_cross_entropy(x: Tensor, t: Tensor, weight: Optional[Tensor],
                         reduction: str) -> Tensor:
    if x._data.shape != t._data.shape:
        raise ValueError(
            f"Using a target size ({t.shape}) that is different to the input size ({x.shape}) "
            "is deprecated. Please ensure they have the same size."
        )
    if t.requires_grad:
        raise RuntimeError("the derivative for 'target' is not implemented")
    xd, td = x._data, t._data
    if bool(((xd < 0) | (xd > 1)).any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    xp = x._backend
    logx = xp.maximum(xp.log(xd), -100)
    log1mx = xp.maximum(xp.log(1 - xd), -100)
    loss = (td - 1) * log1mx - td * logx
    if weight is not None:
        loss = loss * weight._data
    loss = loss.astype(xd.dtype, copy=False)
    out = _reduce_array(xp, loss, reduction)
    inputs = (x, t) if weight is None else (x, t, weight)
    saved = (x, t, weight)
    return record(out, inputs, "BinaryCrossEntropyBackward0", _bce_bw, saved,
                  (reduction, weight is not None))


def _softplus_t(x: Tensor) -> Tensor:
    """log(1 + exp(x)) in rustgrad ops, stable for large |x|."""
    return x.clamp(min=0) + ((-x.abs()).exp() + 1).log()


def _bce_logits_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, t, w, pw = saved
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
        gx = sum_to(_reduce_grad(g, local, reduction), x._data.shape)
    if nt:
        sp = _softplus_t(-x)
        local = (pw - 1) * sp - x if has_pw else -x
        if has_w:
            local = local * w
        gt = sum_to(_reduce_grad(g, local, reduction), t._data.shape)
    out = [gx, gt]
    if has_w:
        out.append(None)
    if has_pw:
        out.append(None)
    return tuple(out)


def binary_cross_entropy_with_logits(x: Tensor, t: Tensor, weight: Optional[Tensor],
                                     reduction: str, pos_weight: Optional[Tensor]) -> Tensor:
    if x._data.shape != t._data.shape:
        raise ValueError(
            f"Target size ({t.shape}) must be the same as input size ({x.shape})"
        )
    xp = x._backend
    xd, td = x._data, t._data
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
    saved = (x, t, weight, pos_weight)
    ctx = (reduction, weight is not None, pos_weight is not None, x.requires_grad,
           t.requires_grad)
    return record(out, tuple(inputs), "BinaryCrossEntropyWithLogitsBackward0", _bce_logits_bw,
                  saved, ctx)


# ---- activations --------------------------------------------------------------------------
def _leaky_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    return where(x > 0, g, g * ctx)


def leaky_relu(x: Tensor, slope: float, name: str = "LeakyReluBackward0") -> Tensor:
    xd = x._data
    out = x._backend.where(xd > 0, xd, xd * slope).astype(xd.dtype, copy=False)
    return record(out, (x,), name, _leaky_bw, (x,), slope)


def _elu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    alpha, scale, input_scale = ctx
    neg = g * (alpha * scale * input_scale) * (x * input_scale).exp()
    return where(x > 0, g * scale if scale != 1 else g, neg)


def elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0,
        name: str = "EluBackward0") -> Tensor:
    xd = x._data
    xp = x._backend
    neg = alpha * xp.expm1(xp.minimum(xd, 0) * input_scale)
    out = (scale * xp.where(xd > 0, xd, neg)).astype(xd.dtype, copy=False)
    return record(out, (x,), name, _elu_bw, (x,), (alpha, scale, input_scale))


def _softplus_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    beta, threshold = ctx
    return where(x * beta > threshold, g, g * (x * beta).sigmoid())


def softplus(x: Tensor, beta: float, threshold: float) -> Tensor:
    xd = x._data
    xp = x._backend
    bx = xd * beta
    soft = (xp.maximum(bx, 0) + xp.log1p(xp.exp(-xp.abs(bx)))) / beta
    out = xp.where(bx > threshold, xd, soft).astype(xd.dtype, copy=False)
    return record(out, (x,), "SoftplusBackward0", _softplus_bw, (x,), (beta, threshold))


def _silu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    s = x.sigmoid()
    return g * (s * (x * (1 - s) + 1))


def silu(x: Tensor) -> Tensor:
    xd = x._data
    xp = x._backend
    e = xp.exp(-xp.abs(xd))
    sig = xp.where(xd >= 0, 1 / (1 + e), e / (1 + e))
    return record((xd * sig).astype(xd.dtype, copy=False), (x,), "SiluBackward0", _silu_bw, (x,))


def _gelu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    if ctx == "tanh":
        k = math.sqrt(2 / math.pi)
        inner = (x + x * x * x * 0.044715) * k
        th = inner.tanh()
        dinner = (x * x * (3 * 0.044715) + 1) * k
        return g * ((th + 1) * 0.5 + x * 0.5 * (1 - th * th) * dinner)
    cdf = (erf(x * (1 / math.sqrt(2))) + 1) * 0.5
    pdf = (x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi))
    return g * (cdf + x * pdf)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    xd = x._data
    xp = x._backend
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        out = 0.5 * xd * (1 + xp.tanh(k * (xd + 0.044715 * xd * xd * xd)))
    elif approximate == "none":
        out = 0.5 * xd * (1 + _erf_array(xp, xd * (1 / math.sqrt(2))))
    else:
        raise RuntimeError("approximate argument must be either none or tanh.")
    return record(out.astype(xd.dtype, copy=False), (x,), "GeluBackward0", _gelu_bw, (x,),
                  approximate)


def _hardtanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    lo, hi = ctx
    return where((x > lo) & (x < hi), g, g * 0)


def hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    xd = x._data
    out = x._backend.clip(xd, lo, hi).astype(xd.dtype, copy=False)
    return record(out, (x,), "HardtanhBackward0", _hardtanh_bw, (x,), (lo, hi))


def _hardsigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    # torch's kernel multiplies by the float literal 1.0f / 6.0f, in every dtype
    return where((x > -3) & (x < 3), g * 0.1666666716337204, g * 0)


def hardsigmoid(x: Tensor) -> Tensor:
    xd = x._data
    out = (x._backend.clip(xd + 3, 0, 6) / 6).astype(xd.dtype, copy=False)
    return record(out, (x,), "HardsigmoidBackward0", _hardsigmoid_bw, (x,))


def _hardswish_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    mid = where(x <= 3, g * (x / 3 + 0.5), g)
    return where(x < -3, g * 0, mid)


def hardswish(x: Tensor) -> Tensor:
    xd = x._data
    out = (xd * x._backend.clip(xd + 3, 0, 6) / 6).astype(xd.dtype, copy=False)
    return record(out, (x,), "HardswishBackward0", _hardswish_bw, (x,))


def _mish_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    tsp = _softplus_t(x).tanh()
    return g * (tsp + x * x.sigmoid() * (1 - tsp * tsp))


def mish(x: Tensor) -> Tensor:
    xd = x._data
    xp = x._backend
    sp = xp.maximum(xd, 0) + xp.log1p(xp.exp(-xp.abs(xd)))
    return record((xd * xp.tanh(sp)).astype(xd.dtype, copy=False), (x,), "MishBackward0",
                  _mish_bw, (x,))


def _logsigmoid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (x,) = saved
    return g * (-x).sigmoid()


def logsigmoid(x: Tensor) -> Tensor:
    xd = x._data
    xp = x._backend
    out = (xp.minimum(xd, 0) - xp.log1p(xp.exp(-xp.abs(xd)))).astype(xd.dtype, copy=False)
    return record(out, (x,), "LogSigmoidBackward0", _logsigmoid_bw, (x,))


# ---- normalization ------------------------------------------------------------------------
def _norm_bw_x(g: Tensor, xhat: Tensor, rstd: Tensor, dims: Tuple[int, ...]) -> Tensor:
    """The input gradient of y = xhat (normalized over dims by batch statistics)."""
    return rstd * (g - g.mean(dims, keepdim=True) - xhat * (g * xhat).mean(dims, keepdim=True))


def _stats(x: Tensor, dims: Tuple[int, ...], eps: float) -> Tuple[Tensor, Tensor]:
    """(xhat, rstd) recomputed in rustgrad ops, so that backward formulas are differentiable."""
    xc = x - x.mean(dims, keepdim=True)
    rstd = ((xc * xc).mean(dims, keepdim=True) + eps).sqrt().reciprocal()
    return xc * rstd, rstd


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


def layer_norm(x: Tensor, shape: Tuple[int, ...], w: Optional[Tensor], b: Optional[Tensor],
               eps: float) -> Tensor:
    """One NativeLayerNormBackward0 node; its formula recomputes the statistics in rustgrad
    ops, so double backward works."""
    xd = x._data
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
    ctx = (dims, eps, _needs(x, w, b), w is not None, b is not None)
    return record(out.astype(xd.dtype, copy=False), inputs, "NativeLayerNormBackward0",
                  _layer_norm_bw, (x, w), ctx)


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


def batch_norm(x: Tensor, running_mean: Optional[Tensor], running_var: Optional[Tensor],
               w: Optional[Tensor], b: Optional[Tensor], training: bool, momentum: float,
               eps: float) -> Tensor:
    """One NativeBatchNormBackward0 node; in training the batch statistics normalize and the
    running statistics are updated in place (unbiased variance), as torch."""
    xd = x._data
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
    ctx = (dims, eps, training, _needs(x, w, b), w is not None, b is not None)
    return record(out.astype(xd.dtype, copy=False), inputs, "NativeBatchNormBackward0",
                  _batch_norm_bw, saved, ctx)


# ---- embedding ----------------------------------------------------------------------------
def _embedding_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx, keep = ctx
    gi = g.reshape(idx.size, shape[1])
    if keep is not None:
        gi = gi * const(keep.reshape(-1, 1).astype(g._data.dtype))
    return index_into_zeros(gi, shape, (idx.reshape(-1),), True)


def embedding(idx: Tensor, weight: Tensor, padding_idx: Optional[int]) -> Tensor:
    idd = idx._data
    if idd.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{_dtype.LEGACY_NAMES[idx.dtype.name]} instead "
            "(while checking arguments for embedding)"
        )
    n = weight._data.shape[0]
    if idd.size and (int(idd.min()) < -n or int(idd.max()) >= n):
        raise IndexError("index out of range in self")
    idd = idd % n if idd.size and int(idd.min()) < 0 else idd
    out = weight._data[idd]
    keep = None if padding_idx is None else (idd != padding_idx)
    return record(out, (weight,), "EmbeddingBackward0", _embedding_bw, None,
                  (weight._data.shape, idd, keep))
