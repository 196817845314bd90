"""Transposed convolution: conv_transpose1d/conv_transpose2d.

A transposed convolution is the gradient of a convolution with respect to its input, so it runs
on the convolution's array machinery backwards: one GEMM (per group) of the weight against the
input gives the columns, and conv's `col2im` sums them into the output. Its backward is the
convolution forward: the input's gradient is conv2d of the output gradient (a recorded op), the
weight's a GEMM over conv's channels-first unfold of it, so double backward works. The node is
torch's ConvolutionBackward0.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from .._tensor import Tensor
from ._declare import op
from .conv import CONVOLUTION, IntOrPair, _unfold_cf, col2im, conv2d, out_size, type_name


def check_transpose_args(s: Sequence[int], p: Sequence[int], op_: Sequence[int],
                         d: Sequence[int], groups: int) -> None:
    """torch's argument checks of a transposed convolution of 2 or 3 spatial dims."""
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if min(p) < 0:
        raise RuntimeError("negative padding is not supported")
    if min(s) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    if min(d) <= 0:
        raise RuntimeError("dilation should be greater than zero")
    # torch checks per dim: smaller than the stride or the dilation
    if any(o >= st and o >= dl for o, st, dl in zip(op_, s, d)) or min(op_) < 0:
        dims = ("depth", "height", "width")[3 - len(s):]

        def each(name: str, v: Sequence[int]) -> str:
            return " ".join(f"{name}_{dim}: {x}" for dim, x in zip(dims, v))

        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            f"{each('output_padding', op_)} {each('stride', s)} {each('dilation', d)}"
        )


def _check_shapes(x: Tensor, w: Tensor, xd: Any, wd: Any, b: Optional[Tensor], groups: int,
                  shown: List[int]) -> None:
    """torch's shape checks of a transposed convolution of 4-D arrays; `shown` is the weight's
    shape as the user passed it (the 1-d op runs on (N, C, 1, L) arrays)."""
    if xd.dtype != wd.dtype:
        raise RuntimeError(f"expected scalar type {type_name(x)} but found {type_name(w)}")
    if wd.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size [{list(shown)}] instead"
        )
    if xd.shape[1] != wd.shape[0]:
        xs = list(xd.shape) if len(shown) == 4 else [xd.shape[0], xd.shape[1], xd.shape[3]]
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(shown)}, expected input{xs} to have "
            f"{wd.shape[0]} channels, but got {xd.shape[1]} channels instead"
        )
    o = wd.shape[1] * groups
    if b is not None and (b._data.ndim != 1 or b._data.shape[0] != o):
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(shown)}, expected bias to be 1-dimensional "
            f"with {o} elements, but got bias of size {list(b._data.shape)} instead"
        )


def _out_size(n: int, k: int, s: int, p: int, o: int, d: int) -> int:
    return (n - 1) * s - 2 * p + d * (k - 1) + o + 1


def _forward(xp: Any, xd: Any, wd: Any, bd: Any, s: Tuple[int, int], p: Tuple[int, int],
             op_: Tuple[int, int], d: Tuple[int, int], groups: int, one_d: bool) -> Any:
    """The (N, O, OH, OW) output of (N, C, H, W) input and (C, O/groups, kh, kw) weight arrays:
    columns W^T @ x, summed into the output by col2im (conv's input-gradient computation)."""
    n, c, h, w = xd.shape
    _, og, kh, kw = wd.shape
    oh = _out_size(h, kh, s[0], p[0], op_[0], d[0])
    ow = _out_size(w, kw, s[1], p[1], op_[1], d[1])
    if oh <= 0 or ow <= 0:
        size = (f"{w}", f"{ow}") if one_d else (f"{h} x {w}", f"{oh} x {ow}")
        raise RuntimeError(
            f"Given input size per channel: ({size[0]}). Calculated output size per channel: "
            f"({size[1]}). Output size is too small"
        )
    cg, ckg = c // groups, og * kh * kw
    x2 = xd.transpose(1, 0, 2, 3).reshape(groups, cg, n * h * w)
    cols = xp.matmul(wd.reshape(groups, cg, ckg).transpose(0, 2, 1), x2)
    cols = cols.reshape(og * groups, kh, kw, n, h, w)
    out = col2im(xp, cols, (oh, ow), d, (p[0], p[0], p[1], p[1]), s, channels_first=True)
    if bd is not None:
        out += bd.reshape(1, -1, 1, 1)
    return out


def _backward(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the gradient of a transposed convolution is a convolution
    x, w = saved
    (n, c, h, wd), (_, og, kh, kw), groups, s, p, d, needs, has_bias = ctx
    gx = gw = gb = None
    nx, nw, nb = needs
    if nx:
        gx = conv2d(g, w, None, s, p, d, groups)
        if gx.shape[2] != h or gx.shape[3] != wd:  # output_padding >= stride adds positions
            gx = gx[:, :, :h, :wd]
    if nw:
        cols = _unfold_cf(g, (kh, kw), d, p, s)  # (O*kh*kw, N*H'*W')
        gh, gw_ = g.shape[2], g.shape[3]
        hh = out_size(gh, kh, d[0], s[0], p[0], p[0])
        ww = out_size(gw_, kw, d[1], s[1], p[1], p[1])
        if (hh, ww) != (h, wd):
            cols = cols.reshape(-1, n, hh, ww)[:, :, :h, :wd].reshape(-1, n * h * wd)
        cg, ckg, nl = c // groups, og * kh * kw, n * h * wd
        x2 = x.permute(1, 0, 2, 3).reshape(c, nl)
        if groups == 1:  # a 2-D product runs as one BLAS call
            gw = (x2 @ cols.t()).reshape(c, og, kh, kw)
        else:
            gw = x2.reshape(groups, cg, nl) @ cols.reshape(groups, ckg, nl).transpose(1, 2)
            gw = gw.reshape(c, og, kh, kw)
    if nb:
        gb = g.sum((0, 2, 3))
    return (gx, gw, gb) if has_bias else (gx, gw)


def _backward1d(g: Tensor, saved: Any, ctx: Any) -> Any:
    # the 2-D formula on the inputs seen as (N, C, 1, L)
    x, w = saved
    grads = _backward(g.unsqueeze(2), (x.unsqueeze(2), w.unsqueeze(2)), ctx)
    gx, gw = (None if t is None else t.squeeze(2) for t in grads[:2])
    return (gx, gw) + tuple(grads[2:])


def _transpose(x: Tensor, w: Tensor, b: Optional[Tensor], s: Tuple[int, int],
               p: Tuple[int, int], op_: Tuple[int, int], d: Tuple[int, int], groups: int,
               one_d: bool) -> Tensor:
    """The checked transposed convolution (1-d on (N, C, 1, L) arrays), recording one
    ConvolutionBackward0."""
    check_transpose_args(s, p, op_, d, groups)
    xd, wd = x._data, w._data
    shown = list(wd.shape)
    if one_d:
        xd, wd = xd[:, :, None, :], wd[:, :, None, :]
    _check_shapes(x, w, xd, wd, b, groups, shown)
    out = _forward(x._backend, xd, wd, None if b is None else b._data, s, p, op_, d, groups,
                   one_d)
    if one_d:
        out = out[:, :, 0, :]
    inputs = (x, w) if b is None else (x, w, b)
    needs = (x.requires_grad, w.requires_grad, b is not None and b.requires_grad)
    ctx = (xd.shape, wd.shape, groups, s, p, d, needs, b is not None)
    return CONVOLUTION.record(out, inputs, (_backward1d if one_d else _backward, ctx), input=x,
                              weight=w)


def _sizes(v: Any, n: int, name: str) -> Tuple[int, ...]:
    """torch's int-or-list argument of an n-d convolution as n ints."""
    if isinstance(v, str):
        raise TypeError(f"conv_transpose{n}d(): argument '{name}' must be tuple of ints, not str")
    if isinstance(v, (tuple, list)):
        if len(v) not in (1, n):
            raise RuntimeError(
                f"expected {name} to be a single integer value or a list of {n} values to match "
                f"the convolution dimensions, but got {name}={list(v)}"
            )
        return tuple(int(e) for e in v) * (n // len(v))
    return (int(v),) * n


def _check_ndim(x: Tensor, w: Tensor, dims: int, name: str, stride: Tuple[int, ...]) -> None:
    if x.ndim != dims + 2:
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got "
            f"input of size: {list(x.shape)}"
        )
    if w.ndim != dims + 2:
        raise RuntimeError(
            "weight should have at least three dimensions" if w.ndim < 3 else
            f"expected stride to be a single integer value or a list of {w.ndim - 2} values to "
            f"match the convolution dimensions, but got stride={list(stride)}"
        )


@op(function="conv_transpose2d", functional="conv_transpose2d", grad_fn="ConvolutionBackward0",
    autocast=dict(cuda="lower", cpu="lower"))
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrPair = 1, padding: IntOrPair = 0,
                     output_padding: IntOrPair = 0, groups: int = 1,
                     dilation: IntOrPair = 1) -> Tensor:
    """2-D transposed convolution of (N, C, H, W) or (C, H, W) input."""
    if input.ndim == 3:
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    s, p = _sizes(stride, 2, "stride"), _sizes(padding, 2, "padding")
    _check_ndim(input, weight, 2, "conv_transpose2d", s)
    op_, d = _sizes(output_padding, 2, "output_padding"), _sizes(dilation, 2, "dilation")
    return _transpose(input, weight, bias, s, p, op_, d, int(groups), False)


@op(function="conv_transpose1d", functional="conv_transpose1d", grad_fn="ConvolutionBackward0",
    autocast=dict(cuda="lower", cpu="lower"))
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Optional[Tensor] = None,
                     stride: IntOrPair = 1, padding: IntOrPair = 0,
                     output_padding: IntOrPair = 0, groups: int = 1,
                     dilation: IntOrPair = 1) -> Tensor:
    """1-D transposed convolution of (N, C, L) or (C, L) input."""
    if input.ndim == 2:
        return conv_transpose1d(input.unsqueeze(0), weight, bias, stride, padding, output_padding,
                                groups, dilation).squeeze(0)
    s, p = (1,) + _sizes(stride, 1, "stride"), (0,) + _sizes(padding, 1, "padding")
    _check_ndim(input, weight, 1, "conv_transpose1d", s[1:])
    op_ = (0,) + _sizes(output_padding, 1, "output_padding")
    d = (1,) + _sizes(dilation, 1, "dilation")
    return _transpose(input, weight, bias, s, p, op_, d, int(groups), True)
