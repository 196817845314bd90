"""3-d convolution: conv3d and conv_transpose3d, over an N-d im2col/col2im pair on arrays.

`windows` gathers every window of a padded (N, C, *S) array into columns with one strided slice
copy per kernel offset; `windows_sum` is its adjoint, a strided accumulation over the same
offsets. Both work on any number of spatial dims and on NumPy and CuPy arrays alike (only
slicing, `full`/`zeros` and `ascontiguousarray`), and take per-dim (low, high) padding, so
padding='same' with an odd total and pooling's ceil_mode need no extra copy. The pooling ops of
pool3d.py use them too.

The convolution is one GEMM (per group) of the weight against the channels-first columns. Its
backward, recorded as torch's ConvolutionBackward0, is written in rustgrad ops over a recorded
unfold/fold pair (Im2ColBackward0 / Col2ImBackward0, each the other's gradient), so double
backward works.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

from .._tensor import Tensor
from ._declare import op
from ._util import same_devices
from .conv import COL2IM, CONVOLUTION, IM2COL, check_groups, type_name
from .conv_transpose import check_transpose_args

Ints = Tuple[int, ...]
Pads = Tuple[Tuple[int, int], ...]  # per spatial dim: (low, high)
IntOrTriple = Union[int, Sequence[int]]


# ---- N-d windows on arrays ----------------------------------------------------------------
def out_len(n: int, k: int, d: int, s: int, lo: int, hi: int) -> int:
    """The number of windows along a dim of size n."""
    return (n + lo + hi - d * (k - 1) - 1) // s + 1


def _offsets(k: Ints, d: Ints, s: Ints, o: Ints) -> Iterator[Tuple[Ints, Tuple[slice, ...]]]:
    """(kernel offset, the strided slices of the padded spatial dims it reads) per offset."""
    for off in itertools.product(*(range(ki) for ki in k)):
        yield off, tuple(slice(i * di, i * di + si * (oi - 1) + 1, si)
                         for i, di, si, oi in zip(off, d, s, o))


def windows(xp: Any, x: Any, k: Ints, d: Ints, pads: Pads, s: Ints, fill: Any = 0,
            channels_first: bool = False) -> Any:
    """(N, C, *S) -> (N, C, *k, *O): each output position's window elements (the padding reads
    as `fill`); channels_first gives (C, *k, N, *O), whose (C*K, N*L) reshape feeds one GEMM."""
    n, c = x.shape[:2]
    size = x.shape[2:]
    o = tuple(out_len(size[i], k[i], d[i], s[i], *pads[i]) for i in range(len(k)))
    if any(p for pair in pads for p in pair):
        padded = xp.full((n, c) + tuple(size[i] + pads[i][0] + pads[i][1]
                                        for i in range(len(k))), fill, dtype=x.dtype)
        padded[(slice(None), slice(None)) + tuple(
            slice(lo, lo + sz) for (lo, _), sz in zip(pads, size))] = x
        x = padded
    if channels_first:
        x = x.swapaxes(0, 1)
        cols = xp.empty((c,) + tuple(k) + (n,) + o, dtype=x.dtype)
        lead: Tuple[slice, ...] = (slice(None),)
    else:
        cols = xp.empty((n, c) + tuple(k) + o, dtype=x.dtype)
        lead = (slice(None), slice(None))
    for off, sl in _offsets(k, d, s, o):
        cols[lead + off] = x[(slice(None), slice(None)) + sl]
    return cols


def windows_sum(xp: Any, cols: Any, size: Ints, d: Ints, pads: Pads, s: Ints,
                channels_first: bool = False) -> Any:
    """The adjoint of `windows`: (N, C, *k, *O) (or channels_first's (C, *k, N, *O)) ->
    (N, C, *size), each window element added back where it was read."""
    nd = len(size)
    if channels_first:
        c, k, n, o = cols.shape[0], cols.shape[1:1 + nd], cols.shape[1 + nd], cols.shape[2 + nd:]
        lead: Tuple[slice, ...] = (slice(None),)
    else:
        n, c, k, o = cols.shape[0], cols.shape[1], cols.shape[2:2 + nd], cols.shape[2 + nd:]
        lead = (slice(None), slice(None))
    full = tuple(size[i] + pads[i][0] + pads[i][1] for i in range(nd))
    out = xp.zeros(((c, n) if channels_first else (n, c)) + full, dtype=cols.dtype)
    for off, sl in _offsets(tuple(k), d, s, tuple(o)):
        out[(slice(None), slice(None)) + sl] += cols[lead + off]
    out = out[(slice(None), slice(None)) + tuple(slice(lo, lo + sz)
                                                 for (lo, _), sz in zip(pads, size))]
    if channels_first:
        out = out.swapaxes(0, 1)
    return xp.ascontiguousarray(out)


# ---- the recorded unfold / fold pair (channels first), each the other's gradient -------------
def unfold_cf(x: Tensor, k: Ints, d: Ints, pads: Pads, s: Ints) -> Tensor:
    """(N, C, *S) -> the (C*K, N*L) columns, recorded as Im2ColBackward0."""
    xd = x._data
    cols = windows(x._backend, xd, k, d, pads, s, channels_first=True)
    o = cols.shape[2 + len(k):]
    out = cols.reshape(xd.shape[1] * math.prod(k), xd.shape[0] * math.prod(o))
    return IM2COL.record(out, (x,), (fold_cf, (tuple(xd.shape), k, d, pads, s, o)))


def fold_cf(cols: Tensor, shape: Ints, k: Ints, d: Ints, pads: Pads, s: Ints,
            o: Ints) -> Tensor:
    """(C*K, N*L) columns summed into (N, C, *S) = `shape`, recorded as Col2ImBackward0."""
    n, c = shape[:2]
    c6 = cols._data.reshape((c,) + tuple(k) + (n,) + tuple(o))
    out = windows_sum(cols._backend, c6, tuple(shape[2:]), d, pads, s, channels_first=True)
    return COL2IM.record(out, (cols,), (unfold_cf, (k, d, pads, s)))


# ---- argument handling -----------------------------------------------------------------------
def expand(v: Any, n: int, name: str, kind: str = "convolution") -> Ints:
    """torch's int-or-list argument as n ints (one value stands for all)."""
    if isinstance(v, str):
        raise TypeError(f"{kind}(): argument '{name}' must be tuple of ints, not str")
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return (int(v[0]),) * n
        return tuple(int(e) for e in v)
    return (int(v),) * n


def _check_lengths(wd: Any, **args: Ints) -> None:
    """torch checks stride, padding and dilation against the weight's spatial dims."""
    want = wd.ndim - 2
    if wd.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    for name, v in args.items():
        if len(v) != want:
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {want} values to "
                f"match the convolution dimensions, but got {name}={list(v)}"
            )


def _check_bias(b: Optional[Tensor], wd: Any, o: int, transposed: bool) -> None:
    if b is not None and (b._data.ndim != 1 or b._data.shape[0] != o):
        pre = "transposed=1, " if transposed else ""
        raise RuntimeError(
            f"Given {pre}weight of size {list(wd.shape)}, expected bias to be 1-dimensional "
            f"with {o} elements, but got bias of size {list(b._data.shape)} instead"
        )


def _same_pads(padding: Any, k: Ints, s: Ints, d: Ints) -> Pads:
    """The (low, high) padding per spatial dim of an int/list padding or 'valid'/'same'
    ('same' puts an odd total's extra element at the high end, as torch)."""
    nd = len(k)
    if not isinstance(padding, str):
        p = expand(padding, nd, "padding")
        return tuple((q, q) for q in p)
    if padding == "valid":
        return ((0, 0),) * nd
    if padding != "same":
        raise RuntimeError(f"Invalid padding string: '{padding}'")
    if any(v != 1 for v in s):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    tot = [d[i] * (k[i] - 1) for i in range(nd)]
    return tuple((t // 2, t - t // 2) for t in tot)


# ---- conv3d ----------------------------------------------------------------------------------
def _conv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    """ConvolutionBackward0's formula of an N-d convolution: two GEMMs over the recorded
    channels-first unfold/fold pair."""
    x, w = saved
    xshape, wshape, groups, d, pads, s, needs, has_bias = ctx
    nx, nw, nb = needs
    nd = len(wshape) - 2
    o, cg, k = wshape[0], wshape[1], tuple(wshape[2:])
    osz = tuple(g.shape[2:])
    nl = xshape[0] * math.prod(osz)
    ckg, og = cg * math.prod(k), o // groups
    g2 = g.transpose(0, 1).reshape(o, nl)
    gx = gw = gb = None
    if nw:
        cols = unfold_cf(x, k, d, pads, s)  # (C*K, N*L)
        if groups == 1:
            gw = (g2 @ cols.t()).reshape(wshape)
        else:
            gw = (g2.reshape(groups, og, nl) @ cols.reshape(groups, ckg, nl).transpose(1, 2))
            gw = gw.reshape(wshape)
    if nx:
        if groups == 1:
            gcols = w.reshape(o, ckg).t() @ g2
        else:
            gcols = w.reshape(groups, og, ckg).transpose(1, 2) @ g2.reshape(groups, og, nl)
            gcols = gcols.reshape(groups * ckg, nl)
        gx = fold_cf(gcols, xshape, k, d, pads, s, osz)
    if nb:
        gb = g.sum((0,) + tuple(range(2, 2 + nd)))
    return (gx, gw, gb) if has_bias else (gx, gw)


def conv_arrays(xp: Any, xd: Any, wd: Any, bd: Any, s: Ints, pads: Pads, d: Ints,
                groups: int) -> Any:
    """The (N, O, *O) output of (N, C, *S) input and (O, C/groups, *k) weight arrays."""
    n, c = xd.shape[:2]
    o, cg = wd.shape[:2]
    k = tuple(wd.shape[2:])
    cols = windows(xp, xd, k, d, pads, s, channels_first=True)
    osz = tuple(cols.shape[2 + len(k):])
    ckg = cg * math.prod(k)
    cols2 = cols.reshape(c * math.prod(k), n * math.prod(osz))
    if groups == 1:
        out = wd.reshape(o, ckg) @ cols2
    else:
        out = xp.matmul(wd.reshape(groups, o // groups, ckg), cols2.reshape(groups, ckg, -1))
    out = xp.ascontiguousarray(out.reshape((o, n) + osz).swapaxes(0, 1))
    if bd is not None:
        out += bd.reshape((1, o) + (1,) * len(k))
    # bfloat16: NumPy's GEMM ran in float32 (as torch's accumulates); round once, bias added
    return out.astype(xd.dtype, copy=False)


def _check_conv(x: Tensor, w: Tensor, b: Optional[Tensor], groups: int, s: Ints, pads: Pads,
                d: Ints) -> None:
    """torch's checks of an N-d convolution's arguments, in its order."""
    xd, wd = x._data, w._data
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError("negative padding is not supported")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    check_groups(xd, wd, groups, list(wd.shape), list(xd.shape))
    _check_bias(b, wd, wd.shape[0], False)
    nd = wd.ndim - 2
    padded = [xd.shape[2 + i] + pads[i][0] + pads[i][1] for i in range(nd)]
    kernel = [d[i] * (wd.shape[2 + i] - 1) + 1 for i in range(nd)]
    if any(a < kk for a, kk in zip(padded, kernel)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
            "actual input size"
        )
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(d)}")
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x)} but found {type_name(w)}")
    if b is not None and b._data.dtype != xd.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x)} but found {type_name(b)}")


@op(function="conv3d", functional="conv3d", grad_fn="ConvolutionBackward0",
    autocast=dict(cuda="lower", cpu="lower"))
def conv3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: IntOrTriple = 1, padding: Union[IntOrTriple, str] = 0,
           dilation: IntOrTriple = 1, groups: int = 1) -> Tensor:
    """3-D convolution (cross-correlation) of (N, C, D, H, W) or (C, D, H, W) input.

    Args:
        weight (Tensor): the filters, (out_channels, in_channels / groups, kD, kH, kW).
        bias (Tensor, optional): (out_channels,). Default: None.
        stride (int or tuple of three ints, optional): the step between windows. Default: 1.
        padding (int, tuple of three ints or str, optional): implicit zero padding on both sides
            of each spatial dim, or 'valid' (none) or 'same' (the output as large as the input;
            stride 1 only). Default: 0.
        dilation (int or tuple of three ints, optional): the spacing of the filter's entries.
            Default: 1.
        groups (int, optional): splits the channels into groups convolved separately.
            Default: 1.

    Example::

        >>> x = rustgrad.ones(1, 1, 3, 3, 3)
        >>> rustgrad.nn.functional.conv3d(x, rustgrad.ones(1, 1, 2, 2, 2)).flatten()
        tensor([8., 8., 8., 8., 8., 8., 8., 8.])
    """
    x, w, b = input, weight, bias
    if x._data.ndim not in (4, 5):
        raise RuntimeError(
            "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: "
            f"{list(x._data.shape)}"
        )
    if x._data.ndim == 4:
        return conv3d(x.unsqueeze(0), w, b, stride, padding, dilation, groups).squeeze(0)
    xd, wd = x._data, w._data
    s, d = expand(stride, 3, "stride", "conv3d"), expand(dilation, 3, "dilation", "conv3d")
    p = padding if isinstance(padding, str) else expand(padding, 3, "padding", "conv3d")
    lengths: Dict[str, Ints] = {"stride": s}
    if not isinstance(p, str):
        lengths["padding"] = p
    lengths["dilation"] = d
    _check_lengths(wd, **lengths)
    pads = _same_pads(p, tuple(wd.shape[2:]), s, d)
    groups = int(groups)
    _check_conv(x, w, b, groups, s, pads, d)
    same_devices((xd, wd) if b is None else (xd, wd, b._data))
    out = conv_arrays(x._backend, xd, wd, None if b is None else b._data, s, pads, d, groups)
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (tuple(xd.shape), tuple(wd.shape), groups, d, pads, s, needs, b is not None)
    return CONVOLUTION.record(out, inputs, (_conv_bw, ctx), input=x, weight=w)


# ---- conv_transpose3d ------------------------------------------------------------------------
def _transpose_arrays(xp: Any, xd: Any, wd: Any, bd: Any, s: Ints, p: Ints, op_: Ints,
                      d: Ints, groups: int) -> Any:
    """The (N, O, *O) output of (N, C, *S) input and (C, O/groups, *k) weight arrays: the
    columns W^T @ x, summed into the output by `windows_sum` (conv's input gradient)."""
    n, c = xd.shape[:2]
    size = tuple(xd.shape[2:])
    og, k = wd.shape[1], tuple(wd.shape[2:])
    nd = len(k)
    osz = tuple((size[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op_[i] + 1
                for i in range(nd))
    if any(v <= 0 for v in osz):
        raise RuntimeError(
            f"Given input size per channel: ({' x '.join(map(str, size))}). Calculated output "
            f"size per channel: ({' x '.join(map(str, osz))}). Output size is too small"
        )
    cg, ckg = c // groups, og * math.prod(k)
    x2 = xd.swapaxes(0, 1).reshape(groups, cg, n * math.prod(size))
    cols = xp.matmul(wd.reshape(groups, cg, ckg).swapaxes(1, 2), x2)
    cols = cols.reshape((og * groups,) + k + (n,) + size)
    out = windows_sum(xp, cols, osz, d, tuple((q, q) for q in p), s, channels_first=True)
    if bd is not None:
        out += bd.reshape((1, -1) + (1,) * nd)
    return out.astype(xd.dtype, copy=False)


def _transpose_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the gradient of a transposed convolution is a convolution (a recorded conv3d)
    x, w = saved
    xshape, wshape, groups, s, p, d, needs, has_bias = ctx
    nx, nw, nb = needs
    n, c, size = xshape[0], xshape[1], tuple(xshape[2:])
    og, k = wshape[1], tuple(wshape[2:])
    nd = len(k)
    crop = (slice(None), slice(None)) + tuple(slice(0, v) for v in size)
    gx = gw = gb = None
    if nx:
        gx = conv3d(g, w, None, s, p, d, groups)
        if tuple(gx.shape[2:]) != size:  # output_padding >= stride adds positions
            gx = gx[crop]
    if nw:
        pads = tuple((q, q) for q in p)
        cols = unfold_cf(g, k, d, pads, s)  # (O*K, N*L')
        got = tuple(out_len(g.shape[2 + i], k[i], d[i], s[i], p[i], p[i]) for i in range(nd))
        if got != size:
            cols = cols.reshape((-1, n) + got)[crop].reshape(-1, n * math.prod(size))
        cg, ckg, nl = c // groups, og * math.prod(k), n * math.prod(size)
        x2 = x.transpose(0, 1).reshape(c, nl)
        if groups == 1:
            gw = (x2 @ cols.t()).reshape(wshape)
        else:
            gw = x2.reshape(groups, cg, nl) @ cols.reshape(groups, ckg, nl).transpose(1, 2)
            gw = gw.reshape(wshape)
    if nb:
        gb = g.sum((0,) + tuple(range(2, 2 + nd)))
    return (gx, gw, gb) if has_bias else (gx, gw)


@op(function="conv_transpose3d", functional="conv_transpose3d", grad_fn="ConvolutionBackward0",
    autocast=dict(cuda="lower", cpu="lower"))
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrTriple = 1, padding: IntOrTriple = 0,
                     output_padding: IntOrTriple = 0, groups: int = 1,
                     dilation: IntOrTriple = 1) -> Tensor:
    """3-D transposed convolution of (N, C, D, H, W) or (C, D, H, W) input.

    Args:
        weight (Tensor): the filters, (in_channels, out_channels / groups, kD, kH, kW).
        bias (Tensor, optional): (out_channels,). Default: None.
        stride (int or tuple of three ints, optional): the step of the filter over the output.
            Default: 1.
        padding (int or tuple of three ints, optional): dilation * (kernel_size - 1) - padding
            zeros of implicit padding. Default: 0.
        output_padding (int or tuple of three ints, optional): extra size added to the high end
            of each output dim. Default: 0.
        groups (int, optional): splits the channels into groups handled separately. Default: 1.
        dilation (int or tuple of three ints, optional): the spacing of the filter's entries.
            Default: 1.

    Example::

        >>> x = rustgrad.ones(1, 1, 2, 2, 2)
        >>> rustgrad.nn.functional.conv_transpose3d(x, rustgrad.ones(1, 1, 2, 2, 2)).shape
        torch.Size([1, 1, 3, 3, 3])
    """
    x, w, b = input, weight, bias
    if x._data.ndim not in (4, 5):
        raise RuntimeError(
            "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of "
            f"size: {list(x._data.shape)}"
        )
    if x._data.ndim == 4:
        return conv_transpose3d(x.unsqueeze(0), w, b, stride, padding, output_padding, groups,
                                dilation).squeeze(0)
    xd, wd = x._data, w._data
    name = "conv_transpose3d"
    s, p = expand(stride, 3, "stride", name), expand(padding, 3, "padding", name)
    op_, d = expand(output_padding, 3, "output_padding", name), expand(dilation, 3, "dilation",
                                                                      name)
    _check_lengths(wd, stride=s, padding=p, dilation=d, output_padding=op_)
    groups = int(groups)
    check_transpose_args(s, p, op_, d, groups)
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x)} but found {type_name(w)}")
    if wd.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(wd.shape)}] instead"
        )
    if xd.shape[1] != wd.shape[0]:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(wd.shape)}, expected input"
            f"{list(xd.shape)} to have {wd.shape[0]} channels, but got {xd.shape[1]} channels "
            "instead"
        )
    _check_bias(b, wd, wd.shape[1] * groups, True)
    same_devices((xd, wd) if b is None else (xd, wd, b._data))
    out = _transpose_arrays(x._backend, xd, wd, None if b is None else b._data, s, p, op_, d,
                            groups)
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (tuple(xd.shape), tuple(wd.shape), groups, s, p, d, needs, b is not None)
    return CONVOLUTION.record(out, inputs, (_transpose_bw, ctx), input=x, weight=w)

