"""Convolution and its array machinery: conv1d/conv2d, unfold/fold (torch's im2col/col2im), pad.

`im2col` / `col2im` work on the device's arrays (through `input._backend`) and are shared with
pooling. Backward formulas are written in rustgrad ops (the convolution's as two GEMMs over a
channels-first unfold/fold pair), so double backward works; grad_fn names as torch's.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, const, is_grad_enabled, record, same_devices
from .gather import _index_add_zeros

Pads = Tuple[int, int, int, int]  # top, bottom, left, right
IntOrPair = Union[int, Tuple[int, int], Sequence[int]]


def type_name(t: Tensor) -> str:
    """torch's ScalarType name of t's dtype ('Float', 'Long')."""
    return _dtype.scalar_type_name(t.dtype)


def check_float(t: Tensor, kernel: str) -> None:
    if t._data.dtype.kind != "c" and not _dtype.is_floating_np(t._data.dtype):
        raise RuntimeError(f'"{kernel}" not implemented for \'{type_name(t)}\'')


def pair(v: Any) -> Tuple[int, int]:
    """An int or a 1- or 2-sequence as a pair of ints (kernel sizes, strides, ...)."""
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return int(v[0]), int(v[0])
        return int(v[0]), int(v[1])
    return int(v), int(v)


def single(v: Any) -> int:
    """An int or the first entry of a sequence (the 1-d ops' sizes)."""
    return int(v[0]) if isinstance(v, (tuple, list)) else int(v)


# ---- im2col / col2im on arrays ------------------------------------------------------------
def out_size(n: int, k: int, d: int, s: int, p_lo: int, p_hi: int) -> int:
    return (n + p_lo + p_hi - d * (k - 1) - 1) // s + 1


def _pad_array(xp: Any, x: Any, pads: Pads, fill: float) -> Any:
    pt, pb, pl, pr = pads
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = xp.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def im2col(xp: Any, x: Any, k: Tuple[int, int], d: Tuple[int, int], pads: Pads,
           s: Tuple[int, int], fill: float = 0.0, channels_first: bool = False) -> Any:
    """(N, C, H, W) -> (N, C, kh, kw, OH, OW): the window elements of every output position;
    channels_first gives (C, kh, kw, N, OH, OW), whose (C*kh*kw, N*OH*OW) reshape feeds one
    GEMM."""
    n, c, h, w = x.shape
    kh, kw = k
    oh = out_size(h, kh, d[0], s[0], pads[0], pads[1])
    ow = out_size(w, kw, d[1], s[1], pads[2], pads[3])
    if oh <= 0 or ow <= 0:
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). "
            "Output size is too small"
        )
    kernel = xp.kernels.im2col  # the CUDA backend's one-kernel im2col (cuda_kernels.py)
    cols = None if kernel is None else kernel(x, k, d, pads, s, fill, channels_first)
    if cols is not None:
        return cols
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


def col2im(xp: Any, cols: Any, size: Tuple[int, int], d: Tuple[int, int], pads: Pads,
           s: Tuple[int, int], channels_first: bool = False) -> Any:
    """The adjoint of im2col: (N, C, kh, kw, OH, OW) (or channels_first's (C, kh, kw, N, OH,
    OW)) -> (N, C, H, W), overlaps summed."""
    kernel = xp.kernels.col2im  # the CPU backend's (rust/kernels), the same sums in the same order
    out = None if kernel is None else kernel(cols, size, d, pads, s, channels_first)
    if out is not None:
        return out
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


# ---- unfold / fold (torch's im2col / col2im layout (N, C*kh*kw, L)) ---------------------------
# unfold and fold are adjoint linear maps, each the other's gradient, in torch's layout and in
# the convolution's channels-first one (below): ctx is the adjoint and its arguments.
def _adjoint_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    adjoint, args = ctx
    return adjoint(g, *args)


IM2COL = node("Im2ColBackward0", _adjoint_bw)
COL2IM = node("Col2ImBackward0", _adjoint_bw)


def unfold_pairs(x: Tensor, k: Tuple[int, int], d: Tuple[int, int], p: Tuple[int, int],
                 s: Tuple[int, int]) -> Tensor:
    """unfold of a 4-D input with every size already a pair (one Im2ColBackward0 node)."""
    xd = x._data
    n, c, h, w = xd.shape
    cols = im2col(x._backend, xd, k, d, (p[0], p[0], p[1], p[1]), s)
    out = cols.reshape(n, c * k[0] * k[1], cols.shape[4] * cols.shape[5])
    return IM2COL.record(out, (x,), (fold_pairs, ((h, w), k, d, p, s)))


def fold_pairs(cols: Tensor, size: Tuple[int, int], k: Tuple[int, int], d: Tuple[int, int],
               p: Tuple[int, int], s: Tuple[int, int]) -> Tensor:
    """fold of a 3-D input with every size already a pair (one Col2ImBackward0 node)."""
    cd = cols._data
    n, ck, L = cd.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={ck} and kernel_size=({k[0]}, {k[1]})."
        )
    c = ck // kk
    oh = out_size(size[0], k[0], d[0], s[0], p[0], p[0])
    ow = out_size(size[1], k[1], d[1], s[1], p[1], p[1])
    if oh * ow != L:
        raise RuntimeError(
            f"Given output_size=({size[0]}, {size[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), "
            f"expected size of input's dimension 2 to match the calculated number of sliding "
            f"blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={L}."
        )
    out = col2im(cols._backend, cd.reshape(n, c, k[0], k[1], oh, ow), size, d,
                 (p[0], p[0], p[1], p[1]), s)
    return COL2IM.record(out, (cols,), (unfold_pairs, (k, d, p, s)))


@op(functional="unfold", grad_fn="Im2ColBackward0")
def unfold(input: Tensor, kernel_size: IntOrPair, dilation: IntOrPair = 1,
           padding: IntOrPair = 0, stride: IntOrPair = 1) -> Tensor:
    """im2col: sliding blocks of (N, C, H, W) as (N, C*kh*kw, L)."""
    if input.ndim == 3:
        return unfold(input.unsqueeze(0), kernel_size, dilation, padding, stride).squeeze(0)
    if input.ndim != 4:
        raise NotImplementedError(
            f"Input Error: Only 4D input Tensors are supported (got {input.ndim}D)"
        )
    k, d, p, s = pair(kernel_size), pair(dilation), pair(padding), pair(stride)
    for what, short, v, bad in (("kernel size", "kernel", k, min(k) <= 0),
                                ("dilation", "dilation", d, min(d) <= 0),
                                ("padding", "pad", p, min(p) < 0),
                                ("stride", "stride", s, min(s) <= 0)):
        if bad:
            rule = "be non-negative" if what == "padding" else "be greater than zero"
            raise RuntimeError(f"{what} should {rule}, but got {short}_height: {v[0]} "
                               f"{short}_width: {v[1]}")
    shape = tuple(input.shape)
    if 0 in shape[1:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(shape)}"
        )
    blocks = [out_size(shape[2 + i], k[i], d[i], s[i], p[i], p[i]) for i in range(2)]
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size ({shape[2]}, {shape[3]}), kernel_size=({k[0]}, "
            f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of "
            f"the array of sliding blocks as ({blocks[0]}, {blocks[1]}), but its components "
            "must be at least one."
        )
    return unfold_pairs(input, k, d, p, s)


@op(functional="fold", grad_fn="Col2ImBackward0")
def fold(input: Tensor, output_size: IntOrPair, kernel_size: IntOrPair,
         dilation: IntOrPair = 1, padding: IntOrPair = 0, stride: IntOrPair = 1) -> Tensor:
    """col2im: (N, C*kh*kw, L) blocks summed back into (N, C, H, W)."""
    if input.ndim == 2:
        return fold(input.unsqueeze(0), output_size, kernel_size, dilation, padding,
                    stride).squeeze(0)
    return fold_pairs(input, pair(output_size), pair(kernel_size), pair(dilation), pair(padding),
                      pair(stride))


# ---- conv1d / conv2d ----------------------------------------------------------------------
# The convolution's backward uses a private unfold/fold pair in the channels-first layout
# (C*kh*kw, N*OH*OW), so that both weight and input gradients are single GEMMs.
def _unfold_cf(x: Tensor, k: Tuple[int, int], d: Tuple[int, int], p: Tuple[int, int],
               s: Tuple[int, int]) -> Tensor:
    xd = x._data
    cols = im2col(x._backend, xd, k, d, (p[0], p[0], p[1], p[1]), s, channels_first=True)
    c, n = xd.shape[1], xd.shape[0]
    out = cols.reshape(c * k[0] * k[1], n * cols.shape[4] * cols.shape[5])
    return IM2COL.record(out, (x,), (_fold_cf, (xd.shape, k, d, p, s, cols.shape[4], cols.shape[5])))


def _fold_cf(cols: Tensor, shape: Tuple[int, ...], k: Tuple[int, int], d: Tuple[int, int],
             p: Tuple[int, int], s: Tuple[int, int], oh: int, ow: int) -> Tensor:
    n, c, h, w = shape
    c6 = cols._data.reshape(c, k[0], k[1], n, oh, ow)
    out = col2im(cols._backend, c6, (h, w), d, (p[0], p[0], p[1], p[1]), s,
                 channels_first=True)
    return COL2IM.record(out, (cols,), (_unfold_cf, (k, d, p, s)))


# ConvolutionBackward0, one node for every convolution: ctx is the formula of the form recorded
# (2-d or 1-d, here and in conv_transpose.py) and its arguments.
def _convolution_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    formula, args = ctx
    return formula(g, saved, args)


CONVOLUTION = node("ConvolutionBackward0", _convolution_bw, saved=("input", "weight"))


def _conv_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, w = saved
    xshape, (o, cg, kh, kw), groups, d, p, s, needs, has_bias, kept = ctx
    if not is_grad_enabled():  # no graph of the gradients to record: the arrays directly
        grads = _conv_bw_arrays(g, x, w, ctx)
        if grads is not None:
            return grads
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
            # as _conv_bw_arrays computes it
            gw = (cols @ g2.t()).t() if ckg >= o else g2 @ cols.t()
            gw = gw.reshape(o, cg, kh, kw)
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


def _conv_bw_arrays(g: Tensor, x: Tensor, w: Tensor, ctx: Any) -> Any:
    """_conv_bw's gradients computed on the arrays, for a backward that records no graph: the
    same GEMMs on the same operands (so the same bits), with the forward's columns (`kept`,
    see _conv_forward) as the weight gradient's operand and then as the buffer of the input
    gradient's columns, instead of an im2col and a new buffer of that size each. The columns
    are taken out of the node's context as they are overwritten; a second backward through
    the node (retain_graph) unfolds the input again. None for what it does not take (groups,
    mixed or half-precision dtypes), which the op formulation then computes."""
    xshape, (o, cg, kh, kw), groups, d, p, s, needs, has_bias, kept = ctx
    gd, xd, wd = g._data, x._data, w._data
    dt = gd.dtype
    if groups != 1 or xd.dtype != dt or wd.dtype != dt or dt.kind != "f" or dt.itemsize < 4:
        return None
    xp = g._backend
    nx, nw, nb = needs
    n, c, h, wi = xshape
    oh, ow = gd.shape[2], gd.shape[3]
    pads = (p[0], p[0], p[1], p[1])
    ck = c * kh * kw
    g2 = xp.ascontiguousarray(gd.transpose(1, 0, 2, 3)).reshape(o, n * oh * ow)
    cols = kept.pop() if kept else None  # (C*kh*kw, N*OH*OW), x's at the forward
    gx = gw = gb = None
    if nw:
        if cols is None:
            cols = im2col(xp, xd, (kh, kw), d, pads, s, channels_first=True).reshape(ck, -1)
        # w's gradient g2 cols^T, as (cols g2^T)^T where that is OpenBLAS's faster order of
        # operands (the same dot products: the same bits)
        gw = (cols @ g2.T).T if ck >= o else g2 @ cols.T
        gw = const(xp.ascontiguousarray(gw).reshape(o, cg, kh, kw))
    if nx:
        # the input gradient's columns w^T g2, into the columns' buffer once they are used
        w2t = wd.reshape(o, ck).T
        gcols = w2t @ g2 if cols is None else xp.matmul(w2t, g2, out=cols)
        gx = const(col2im(xp, gcols.reshape(c, kh, kw, n, oh, ow), (h, wi), d, pads, s,
                          channels_first=True))
    if nb:
        gb = g.sum((0, 2, 3))
    return (gx, gw, gb) if has_bias else (gx, gw)


def _padding(padding: Any, k: Tuple[int, int], s: Tuple[int, int],
             d: Tuple[int, int]) -> Union[Tuple[int, int], List[int]]:
    """The (h, w) padding, or for padding='same' with an odd total, the F.pad amounts the input
    needs first (torch pads such an input, then convolves it unpadded)."""
    if not isinstance(padding, str):
        return pair(padding)
    if padding == "valid":
        return (0, 0)
    if padding != "same":
        raise ValueError(f"Invalid padding string '{padding}'")
    if s != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions")
    tot = (d[0] * (k[0] - 1), d[1] * (k[1] - 1))
    if tot[0] % 2 or tot[1] % 2:
        return [tot[1] // 2, tot[1] - tot[1] // 2, tot[0] // 2, tot[0] - tot[0] // 2]
    return (tot[0] // 2, tot[1] // 2)


def _check_conv(xd: Any, wd: Any, groups: int, x: Tensor, w: Tensor, name: str,
                dims: int) -> None:
    if xd.ndim != dims + 2:
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got "
            f"input of size: {list(xd.shape)}"
        )
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")



def check_groups(xd: Any, wd: Any, groups: int, wshape: List[int], xshape: List[int]) -> None:
    """torch's checks of a convolution's weight and input channels against groups (wshape and
    xshape: the shapes its messages show)."""
    if wd.shape[0] == 0:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least 1 at dimension 0, but got "
            f"weight of size {wshape} instead"
        )
    if wd.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{wshape}] instead"
        )
    c, cg = xd.shape[1], wd.shape[1]
    if cg * groups != c:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {wshape}, expected input"
            f"{xshape} to have {cg * groups} channels, but got {c} channels instead"
        )

def _check_window(xd: Any, wd: Any, x: Tensor, w: Tensor, groups: int, s: Tuple[int, int],
                  p: Tuple[int, int], d: Tuple[int, int], dims: int) -> None:
    """torch's checks of a convolution's arguments, in its order, on the (N, C, H, W) input and
    (O, C/groups, kh, kw) weight arrays (a 1-d convolution seen as one of height 1)."""
    if p[0] < 0 or p[1] < 0:
        raise RuntimeError("negative padding is not supported")
    if s[0] <= 0 or s[1] <= 0:
        raise RuntimeError("non-positive stride is not supported")
    # the 1-d op runs on (N, C, 1, L) arrays: its messages show the shapes as given
    shown = (lambda a: list(a.shape)) if dims == 2 else (lambda a: [a.shape[0], a.shape[1], a.shape[3]])
    check_groups(xd, wd, groups, shown(wd), shown(xd))
    first = 2 if dims == 2 else 3
    padded = [xd.shape[2 + i] + 2 * p[i] for i in range(first - 2, 2)]
    kernel = [d[i] * (wd.shape[2 + i] - 1) + 1 for i in range(first - 2, 2)]
    if any(a < k for a, k in zip(padded, kernel)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
            f"Kernel size: ({' x '.join(map(str, kernel))}). Kernel size can't be greater than "
            "actual input size"
        )
    if d[0] <= 0 or d[1] <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got {list(d)}")
    if wd.shape[2] <= 0 or wd.shape[3] <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got kernel_height: {wd.shape[2]} "
            f"kernel_width: {wd.shape[3]}"
        )
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x)} but found {type_name(w)}")


# The forward's im2col columns are kept for the weight gradient (and reused as the buffer of
# the input gradient's columns) when they are at most this many bytes; larger ones are unfolded
# again in the backward rather than held from the forward on.
KEEP_COLS_BYTES = 32 << 20


def _conv_forward(xp: Any, xd: Any, wd: Any, bd: Any, s: Tuple[int, int], p: Tuple[int, int],
                  d: Tuple[int, int], groups: int, kept: Optional[list] = None) -> Any:
    """The (N, O, OH, OW) output of (N, C, H, W) input and (O, C/groups, kh, kw) weight arrays:
    one GEMM (per group) over the channels-first im2col. With `kept` (a list), the (C*kh*kw,
    N*OH*OW) columns are appended to it when they fit KEEP_COLS_BYTES."""
    same_devices((xd, wd) if bd is None else (xd, wd, bd))
    n, c = xd.shape[:2]
    o, cg, kh, kw = wd.shape
    cols = im2col(xp, xd, (kh, kw), d, (p[0], p[0], p[1], p[1]), s, channels_first=True)
    oh, ow = cols.shape[4], cols.shape[5]
    ckg = cg * kh * kw
    cols2 = cols.reshape(c * kh * kw, n * oh * ow)
    if kept is not None and cols2.nbytes <= KEEP_COLS_BYTES:
        kept.append(cols2)
    if groups == 1:
        out = wd.reshape(o, ckg) @ cols2
    else:
        out = xp.matmul(wd.reshape(groups, o // groups, ckg),
                        cols2.reshape(groups, ckg, -1))
    if bd is not None and out.dtype == xd.dtype and bd.dtype == out.dtype:
        # the (O, N, L) -> (N, O, L) transpose and the bias in one pass (the same sums)
        res = xp.empty((n, o, oh, ow), dtype=out.dtype)
        xp.add(out.reshape(o, n, oh * ow).transpose(1, 0, 2), bd.reshape(1, o, 1),
               out=res.reshape(n, o, oh * ow))
        return res
    out = xp.ascontiguousarray(out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3))
    if bd is not None:
        out += bd.reshape(1, o, 1, 1)
    # bfloat16: NumPy's GEMM ran in float32 (as torch's accumulates); round once, bias added
    return out.astype(xd.dtype, copy=False)


def _kept_cols(w: Tensor) -> Optional[list]:
    """The list the forward keeps its columns in when a backward will want them (the weight's
    gradient is recorded), else None."""
    return [] if w.requires_grad and is_grad_enabled() else None


@op(function="conv2d", functional="conv2d", grad_fn="ConvolutionBackward0", autocast=dict(cuda="lower", cpu="lower"))
def conv2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: IntOrPair = 1, padding: Union[IntOrPair, str] = 0,
           dilation: IntOrPair = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) input."""
    x, w, b = input, weight, bias
    if x._data.ndim == 3:
        return conv2d(x.unsqueeze(0), w, b, stride, padding, dilation, groups).squeeze(0)
    xd, wd = x._data, w._data
    _check_conv(xd, wd, groups, x, w, "conv2d", 2)
    s, d = pair(stride), pair(dilation)
    p = _padding(padding, wd.shape[2:], s, d)
    if isinstance(p, list):
        return conv2d(pad(x, p), w, b, 1, 0, d, groups)
    _check_window(xd, wd, x, w, groups, s, p, d, 2)
    kept = _kept_cols(w)
    out = _conv_forward(x._backend, xd, wd, None if b is None else b._data, s, p, d, groups,
                        kept)
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (xd.shape, wd.shape, groups, d, p, s, needs, b is not None, kept)
    return CONVOLUTION.record(out, inputs, (_conv_bw, ctx), input=x, weight=w)


def _conv1d_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the 2-D formula on the inputs seen as (N, C, 1, L)
    x, w = saved
    grads = _conv_bw(g.unsqueeze(2), (x.unsqueeze(2), w.unsqueeze(2)), ctx)
    gx, gw = (None if t is None else t.squeeze(2) for t in grads[:2])
    return (gx, gw) + tuple(grads[2:])


@op(function="conv1d", functional="conv1d", grad_fn="ConvolutionBackward0", autocast=dict(cuda="lower", cpu="lower"))
def conv1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
           stride: IntOrPair = 1, padding: Union[IntOrPair, str] = 0,
           dilation: IntOrPair = 1, groups: int = 1) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) or (C, L) input."""
    x, w, b = input, weight, bias
    if x._data.ndim == 2:
        return conv1d(x.unsqueeze(0), w, b, stride, padding, dilation, groups).squeeze(0)
    xd, wd = x._data, w._data
    _check_conv(xd, wd, groups, x, w, "conv1d", 1)
    s, d = (1, single(stride)), (1, single(dilation))
    p = _padding(padding if isinstance(padding, str) else (0, single(padding)),
                 (1, wd.shape[2]), s, d)
    if isinstance(p, list):
        return conv1d(pad(x, p[:2]), w, b, 1, 0, d[1], groups)
    x4, w4 = xd[:, :, None, :], wd[:, :, None, :]
    _check_window(x4, w4, x, w, groups, s, p, d, 1)
    kept = _kept_cols(w)
    out = _conv_forward(x._backend, x4, w4, None if b is None else b._data, s, p, d,
                        groups, kept)[:, :, 0, :]
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (x4.shape, w4.shape, groups, d, p, s, needs, b is not None, kept)
    return CONVOLUTION.record(out, inputs, (_conv1d_bw, ctx), input=x, weight=w)


# ---- pad ----------------------------------------------------------------------------------
_PAD_MODES = ("constant", "reflect", "replicate", "circular")


@op(functional="pad",
    grad_fn=("ConstantPadNdBackward0", "ReflectionPad1DBackward0", "ReflectionPad2DBackward0",
             "ReflectionPad3DBackward0", "ReplicationPad1DBackward0", "ReplicationPad2DBackward0",
             "ReplicationPad3DBackward0", "torch::autograd::CopySlices"))
def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: Optional[float] = None) -> Tensor:
    """input padded at both ends of its last dims (negative amounts crop).

    pad = (last_lo, last_hi, second_last_lo, ...); modes constant, reflect, replicate,
    circular."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    xd = input._data
    pads = [int(q) for q in pad]
    if len(pads) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pads) // 2 > xd.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pads)} and input of dimension {xd.ndim}"
        )
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(len(pads) // 2)]
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        return _pad_index(input, pairs, mode)
    nd = xd.ndim
    crop = [slice(None)] * nd
    shape = list(xd.shape)
    place = [slice(None)] * nd
    for i, (lo, hi) in enumerate(pairs):
        dim = nd - 1 - i
        size = shape[dim]
        kept = size - max(-lo, 0) - max(-hi, 0)
        if kept < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        crop[dim] = slice(max(-lo, 0), size - max(-hi, 0))
        shape[dim] = size + lo + hi
        place[dim] = slice(max(lo, 0), max(lo, 0) + kept)
    out = input._backend.full(tuple(shape), 0 if value is None else value, dtype=xd.dtype)
    out[tuple(place)] = xd[tuple(crop)]
    return CONSTANT_PAD.record(out, (input,), (tuple(place), tuple(crop), xd.shape))


def _pad_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the gradient of the kept part, zeros where the input was cropped
    place, crop, shape = ctx
    piece = g[place]
    if all(c == slice(None) or c.indices(n) == (0, n, 1) for c, n in zip(crop, shape)):
        return piece
    return pad(piece, _pads_from_crop(crop, shape))


CONSTANT_PAD = node("ConstantPadNdBackward0", _pad_bw)


def _pads_from_crop(crop: Tuple[slice, ...], shape: Tuple[int, ...]) -> List[int]:
    pads: List[int] = []
    for dim in reversed(range(len(shape))):
        start, stop, _ = crop[dim].indices(shape[dim])
        pads += [start, shape[dim] - stop]
    return pads


def _pad_index_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    for dim, idx, shape in reversed(ctx):
        g = _index_add_zeros(g, shape, dim, idx)
    return g


# torch's node of each mode and number of padded dims (circular padding's is CopySlices)
_PAD_INDEX = {(mode, k): node(f"{name}{k}DBackward0", _pad_index_bw)
              for mode, name in (("reflect", "ReflectionPad"), ("replicate", "ReplicationPad"))
              for k in (1, 2, 3)}


def _pad_index(x: Tensor, pairs: List[Tuple[int, int]], mode: str) -> Tensor:
    """reflect / replicate / circular padding as one gather per padded dim, recorded as one
    node with torch's name; its gradient adds each output element back where it was read."""
    xp = x._backend
    nd = x._data.ndim
    out = x._data
    steps = []
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
        else:  # circular
            idx = xp.mod(pos, n)
        idx = idx.astype(_dtype.int64.np)
        steps.append((dim, idx, out.shape))
        out = xp.take(out, idx, axis=dim)
    if not steps:
        out = out.copy()
    k = len(pairs)
    spec = _PAD_INDEX.get((mode, k))
    if spec is not None:
        return spec.record(out, (x,), tuple(steps))
    # circular padding's node is torch's CopySlices (specified in copyslices.py with its own
    # formula), and a padding of 0 or more than 3 dims (which torch refuses) has no torch node:
    # both recorded directly
    if mode == "circular":
        name = "torch::autograd::CopySlices"
    else:
        name = f"{'ReflectionPad' if mode == 'reflect' else 'ReplicationPad'}{k}DBackward0"
    return record(out, (x,), name, _pad_index_bw, None, tuple(steps))


# ---- channel_shuffle ------------------------------------------------------------------------
def _channel_shuffle_bw(g: Tensor, saved: Any, groups: Any) -> Any:
    # the inverse permutation is the shuffle with the other factor of the channel count
    return channel_shuffle(g, g._data.shape[1] // groups)


CHANNEL_SHUFFLE = node("ChannelShuffleBackward0", _channel_shuffle_bw,
                       getters={"groups": lambda s, c: c})


@op(function="channel_shuffle", functional="channel_shuffle", grad_fn="ChannelShuffleBackward0")
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """The channels (dim 1) of (N, C, *) input regrouped: split into groups of C / groups,
    channel j of group i moves to position j * groups + i.

    Args:
        input (Tensor): (N, C, *), at least 3 dims.
        groups (int): the number of groups; must divide C.

    Example::

        >>> x = rustgrad.arange(4.).view(1, 4, 1)
        >>> rustgrad.nn.functional.channel_shuffle(x, 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    xd = input._data
    if xd.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(xd.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = xd.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    xp = input._backend
    n = xd.shape[0]
    rest = xd.shape[2:]
    out = xd.reshape((n, groups, c // groups) + rest).swapaxes(1, 2).reshape(xd.shape)
    return CHANNEL_SHUFFLE.record(xp.ascontiguousarray(out), (input,), groups)


@op(function="native_channel_shuffle", functional="native_channel_shuffle",
    grad_fn="torch::autograd::NotImplemented")
def native_channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """channel_shuffle's native kernel, which has no derivative (backward through it is
    torch's "not implemented" error).

    Example::

        >>> x = rustgrad.arange(4.).view(1, 4, 1)
        >>> rustgrad.native_channel_shuffle(x, 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    out = channel_shuffle(input.detach(), groups)
    return NOT_IMPLEMENTED.record(out._data, (input,), "native_channel_shuffle")
