"""Ops along a sequence axis: segment_reduce (reductions over consecutive runs of entries, given
by their lengths or offsets) and conv_tbc (the 1-d convolution of (time, batch, channel)
sequences)."""

from __future__ import annotations

from typing import Any, Optional

from .. import _creation, _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, opmath, quiet_fp, same_devices
from .joins import cat
from .linalg import einsum

_REDUCTIONS = {"sum": "sum", "prod": "prod", "mean": "mean", "max": "amax", "amax": "amax",
               "min": "amin", "amin": "amin"}
# what an empty segment holds without `initial`
_EMPTY = {"sum": 0.0, "prod": 1.0, "mean": float("nan"), "amax": float("-inf"),
          "amin": float("inf")}


def _not_implemented(kernel: str, t: Tensor) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for '
                               f"'{_dtype.scalar_type_name(t.dtype)}'")


def _bounds(data: Tensor, lengths: Optional[Tensor], offsets: Optional[Tensor], axis: int,
            unsafe: bool) -> Any:
    """(starts, ends): host int arrays of shape (rows, segments), a row per index of the dims
    before axis."""
    host = _creation._np
    given = offsets if offsets is not None else lengths
    assert given is not None
    if given.dtype not in (_dtype.int64, _dtype.int32):
        kernel = "_segment_reduce_offsets_cpu_kernel1" if offsets is not None \
            else "_segment_reduce_lengths_cpu_kernel1"
        raise _not_implemented(kernel, given)
    if given._data.ndim - 1 != axis:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"{'offsets' if offsets is not None else 'lengths'} but got {axis}.")
    arr = given._backend.to_numpy(given._data).astype(host.int64)
    lead = 1
    for n in arr.shape[:-1]:
        lead *= n
    rows = arr.reshape((lead, arr.shape[-1]))
    if offsets is not None:
        return rows[:, :-1], rows[:, 1:]
    if (rows < 0).any():
        raise RuntimeError("lengths contains negative value!")
    n = data._data.shape[axis]
    if not unsafe and (rows.sum(-1) != n).any():
        raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                           "data.size(lengths.dim()-1) when !unsafe.")
    ends = host.cumsum(rows, -1)
    return ends - rows, ends


def _segments(data: Any, axis: int) -> Any:
    """data as (rows, N, rest): a row per index of the dims before axis."""
    pre = 1
    for s in data.shape[:axis]:
        pre *= s
    return data.reshape((pre, data.shape[axis], -1))


def _reduce_segment(xp: Any, seg: Any, kind: str, initial: Any) -> Any:
    """One segment's reduction over its first dim (seg: (length, rest))."""
    n = seg.shape[0]
    if n == 0:
        fill = _EMPTY[kind] if initial is None else initial
        return xp.full(seg.shape[1:], fill, dtype=seg.dtype)
    if kind == "sum":
        out = seg.sum(0)
        return out if initial is None else out + initial
    if kind == "mean":
        out = seg.sum(0)
        if initial is not None:
            out = out + initial
        return out / n
    if kind == "prod":
        out = seg.prod(0)
        return out if initial is None else out * initial
    out = seg.max(0) if kind == "amax" else seg.min(0)
    if initial is not None:
        pick = xp.maximum if kind == "amax" else xp.minimum
        out = pick(out, seg.dtype.type(initial))
    return out


def _segment_grad(xp: Any, g: Any, seg: Any, result: Any, kind: str, initial: Any) -> Any:
    """One segment's gradient (seg: (length, rest); g, result: (rest,))."""
    n = seg.shape[0]
    if kind == "sum":
        return xp.broadcast_to(g, seg.shape)
    if kind == "mean":
        return xp.broadcast_to(g / n, seg.shape)
    if kind in ("amax", "amin"):
        # torch's kernel: every entry equal to the result (or NaN) gets g; where two or more
        # do, a positive g is shared among them (a negative one is not, as torch's)
        hit = (seg == result) | (seg != seg)
        count = hit.sum(0)
        out = xp.where(hit, g, 0).astype(seg.dtype)
        shared = (count >= 2) & (out > 0)
        return xp.where(shared, out / xp.maximum(count, 1).astype(seg.dtype), out)
    # prod: the product of the others; a single zero gets the product of the rest, two none
    zero = seg == 0
    zeros = zero.sum(0)
    rest = xp.where(zero, 1, seg).prod(0)
    if initial is not None:
        rest = rest * initial
    with quiet_fp(xp):
        plain = g * result / seg
    only = g * rest
    return xp.where(zeros == 0, plain, xp.where((zeros == 1) & zero, only, 0)).astype(seg.dtype)


def _segment_reduce_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    data, result = saved.values, saved.result
    kind, axis, starts, ends, initial = ctx
    xp = g._backend
    d3 = _segments(data._data, axis)
    g3 = g._data.reshape((d3.shape[0], starts.shape[1], d3.shape[2]))
    r3 = result._data.reshape(g3.shape)
    out = xp.zeros(d3.shape, dtype=d3.dtype)
    for p in range(d3.shape[0]):
        for s in range(starts.shape[1]):
            a, b = int(starts[p, s]), int(ends[p, s])
            if b > a:
                out[p, a:b] = _segment_grad(xp, g3[p, s], d3[p, a:b], r3[p, s], kind, initial)
    # torch has no derivative for the backward itself
    return NOT_IMPLEMENTED.record(out.reshape(data._data.shape), (g, data),
                                  "_segment_reduce_backward")


# (the slot is "values": record's own first parameter is named data)
SEGMENT_REDUCE = node("SegmentReduceBackward0", _segment_reduce_bw, saved=("values",),
                      result=True, getters={"data": lambda s, c: s[0]})


@op(function="segment_reduce", grad_fn=("SegmentReduceBackward0", "torch::autograd::NotImplemented"))
def segment_reduce(data: Tensor, reduce: str, *, lengths: Optional[Tensor] = None,
                   indices: Optional[Tensor] = None, offsets: Optional[Tensor] = None,
                   axis: int = 0, unsafe: bool = False, initial: Any = None) -> Tensor:
    """Reductions of consecutive segments of data along axis: segment i is the next lengths[i]
    entries (or entries offsets[i] to offsets[i + 1]).

    Args:
        data (Tensor): the values, a floating point tensor.
        reduce (str): "sum", "prod", "mean", "max" ("amax") or "min" ("amin").
        lengths (Tensor, optional): keyword-only; the segments' lengths (int32/int64), its last
            dim along axis, its leading dims data's.
        indices (Tensor, optional): keyword-only; not supported (as torch).
        offsets (Tensor, optional): keyword-only; the segments' bounds, one more than their
            number (used instead of lengths when given).
        axis (int, optional): keyword-only; the dim reduced. Default: 0.
        unsafe (bool, optional): keyword-only; skip checking that the lengths sum to the
            dim's size. Default: False.
        initial (Number, optional): keyword-only; the value each reduction starts from (an
            empty segment's result; mean divides data's sum plus it by the length).

    An empty segment gives, without initial, 0 (sum), 1 (prod), nan (mean), -inf (max) or
    inf (min). The gradient of max and min goes to the entries equal to the result, shared
    among ties when it is positive (as torch's kernel does).

    Example::

        >>> data = rustgrad.tensor([1., 2., 3., 4., 5.])
        >>> rustgrad.segment_reduce(data, "sum", lengths=rustgrad.tensor([2, 0, 3]))
        tensor([ 3.,  0., 12.])
    """
    kind = _REDUCTIONS.get(reduce)
    if kind is None:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if lengths is None and offsets is None:
        if indices is not None:
            raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    d = data._data
    axis = _wrap_dim(axis, d.ndim)
    if not data.dtype.is_floating_point:
        raise _not_implemented("_segment_reduce_cpu", data)
    starts, ends = _bounds(data, lengths, offsets, axis, unsafe)
    xp = data._backend
    if initial is not None:
        initial = float(initial)
    d3 = _segments(opmath(d), axis)
    nseg = starts.shape[1]
    out = xp.empty((d3.shape[0], nseg, d3.shape[2]), dtype=d3.dtype)
    with quiet_fp(xp):
        for p in range(d3.shape[0]):
            for s in range(nseg):
                a, b = max(int(starts[p, s]), 0), int(ends[p, s])
                out[p, s] = _reduce_segment(xp, d3[p, a:max(a, b)], kind, initial)
    out = out.reshape(d.shape[:axis] + (nseg,) + d.shape[axis + 1:]).astype(d.dtype)
    return SEGMENT_REDUCE.record(out, (data,), (kind, axis, starts, ends, initial),
                               values=data)


# ---- conv_tbc -----------------------------------------------------------------------------------
def _padded(x: Tensor, pad: int) -> Tensor:
    """x with pad zero steps before and after along dim 0 (cut by -pad when pad < 0),
    differentiable in x."""
    if pad == 0:
        return x
    if pad < 0:
        return x[-pad:x.shape[0] + pad]
    z = _creation.zeros((pad,) + tuple(x.shape[1:]), dtype=x.dtype, device=x.device)
    return cat([z, x, z])


def _conv_tbc_bw(g: Tensor, saved: Any, pad: Any) -> Any:
    x, w = saved.self, saved.weight
    k = w.shape[0]
    gx = conv_tbc(g, w.flip(0).transpose(1, 2),
                  _creation.zeros(w.shape[1], dtype=g.dtype, device=g.device), k - 1 - pad)
    windows = _padded(x, pad).unfold(0, g.shape[0], 1)  # (K, B, C, T_out)
    gw = einsum("kbct,tbo->kco", windows, g)
    return gx, gw, g.sum((0, 1))


CONV_TBC = node("ConvTbcBackward0", _conv_tbc_bw, saved=("self", "weight", "bias"),
                getters={"pad": lambda s, c: c})


@op(function="conv_tbc", grad_fn=("ConvTbcBackward0", "CatBackward0", "UnfoldBackward0"),
    autocast=dict(cuda="lower", cpu="lower"))
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """The 1-d convolution of a (time, batch, in_channels) sequence: output[t, b] =
    bias + sum over k of padded_input[t + k, b] @ weight[k].

    Args:
        input (Tensor): (time, batch, in_channels).
        weight (Tensor): (kernel_width, in_channels, out_channels).
        bias (Tensor): (out_channels,).
        pad (int, optional): zero time steps added before and after. Default: 0.

    The output has time + 2 * pad - kernel_width + 1 steps.

    Example::

        >>> x = rustgrad.ones(5, 2, 3)
        >>> rustgrad.conv_tbc(x, rustgrad.ones(2, 3, 4), rustgrad.zeros(4), 1).shape
        torch.Size([6, 2, 4])
    """
    x, w, b = input._data, weight._data, bias._data
    if x.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if w.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if b.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if x.shape[2] != w.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if w.shape[2] != b.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    same_devices([x, w, b])
    steps = x.shape[0] + 2 * pad - w.shape[0] + 1
    shape = (steps, x.shape[1], w.shape[2])
    if steps < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {steps}: "
                           f"{list(shape)}")
    xp = input._backend
    xa = opmath(x)
    if pad > 0:
        padded = xp.zeros((x.shape[0] + 2 * pad,) + x.shape[1:], dtype=xa.dtype)
        padded[pad:pad + x.shape[0]] = xa
    else:
        padded = xa[-pad:x.shape[0] + pad]
    out = xp.empty(shape, dtype=xa.dtype)
    out[...] = opmath(b)
    wa = opmath(w)
    for k in range(w.shape[0]):
        out += xp.einsum("tbc,co->tbo", padded[k:k + steps], wa[k])
    return CONV_TBC.record(out.astype(x.dtype), (input, weight, bias), pad, self=input,
                           weight=weight, bias=bias)
