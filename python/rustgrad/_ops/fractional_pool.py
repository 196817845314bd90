"""Fractional max pooling: fractional_max_pool2d/3d (Graham's pseudo-random windows).

Along each pooled dim of size S, output o of O starts its window of size K at
``int((o + u) * a) - int(u * a)`` with ``a = (S - K) / (O - 1)`` (the last window ends at the
border), for one sample ``u`` per (batch, channel) and dim: the `_random_samples` tensor,
(N, C, dims), drawn uniformly in [0, 1) from rustgrad's generator when none is given. The
starts are computed in the input's dtype, one rounding per operation, as torch's kernel does,
so the same samples give torch's windows exactly. Each window's max (the first of ties, the
last NaN) and its flat index in its plane or volume are gathered from all window offsets at
once; the gradient is scattered back to the maxima and recorded, under create_graph, as
torch's ``...BackwardBackward0`` node whose own gradient is the gather at the maxima.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple, Union

from .. import _creation, _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const, is_grad_enabled
from .conv import type_name

IntOrTuple = Union[int, Sequence[int]]
Ints = Tuple[int, ...]
_NAMES = {2: "fractional_max_pool2d", 3: "fractional_max_pool3d"}
# torch's messages name the 3-d op's out= variant where its checks live
_CHECKER = {2: "fractional_max_pool2d", 3: "fractional_max_pool3d_out"}
_DIM_WORDS = ("time", "height", "width")


def _as_tuple(v: Any, n: int) -> Tuple[Any, ...]:
    """torch's `_pair`/`_triple`: a sequence as it is, anything else n times."""
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def _sizes(v: Any, n: int, what: str) -> Ints:
    """An int or an n-sequence of ints (no other length, as torch's argument check)."""
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            ints = "Ints" if n == 2 else "three Ints"
            raise RuntimeError(f"{_NAMES[n]}: {what} must either be a single Int or tuple of "
                               f"{ints}")
        return tuple(int(e) for e in v)
    return (int(v),) * n


def _output_size(input: Tensor, output_size: Any, output_ratio: Any, n: int) -> Any:
    """output_size as given, or the input's size times output_ratio (torch's Python half)."""
    if output_size is None and output_ratio is None:
        raise ValueError(f"{_NAMES[n]} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is not None:
        return output_size
    if n == 2 and len(output_ratio) > 2:
        raise ValueError("fractional_max_pool2d requires output_ratio to either be a single Int "
                         "or tuple of Ints.")
    ratio = _as_tuple(output_ratio, n)
    return [int(input.size(i - n) * ratio[i]) for i in range(n)]


def _samples(input: Tensor, samples: Optional[Tensor], n: int) -> Tensor:
    """The given samples, or (N, C, n) uniform ones from rustgrad's generator."""
    if samples is not None:
        return samples
    batch = 1 if input.dim() == n + 1 else input.size(0)
    channels = input.size(-n - 1)
    if not _dtype.is_floating_np(input._data.dtype):
        raise NotImplementedError(
            f'"check_uniform_bounds" not implemented for \'{type_name(input)}\'')
    return _creation.rand(batch, channels, n, dtype=input.dtype, device=input.device)


def _check(input: Tensor, k: Ints, out: Ints, samples: Tensor, n: int) -> Tuple[int, int]:
    """torch's checks after the argument sizes', in its order; (batch, channels) of the
    input."""
    if min(k) <= 0:
        raise RuntimeError(f"{_NAMES[n]}(): kernel size should be greater than zero, but got "
                           f"{'x'.join(str(v) for v in k)}")
    xd = input._data
    where = _CHECKER[n]
    if xd.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{where}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(xd.shape)}")
    for dim in range(1, xd.ndim):  # (as torch's: the first dim is never checked)
        if xd.shape[dim] == 0:
            raise RuntimeError(
                f"{where}(): Expected input to have non-zero size for non-batch dimensions, "
                f"but got{list(xd.shape)} with dimension {dim} being empty.")
    size = xd.shape[-n:]
    words = _DIM_WORDS[3 - n:]
    for i in range(n):
        # the 3-d kernel asks for one more element than the 2-d one (torch's checks differ)
        if out[i] + k[i] - 1 > size[i] - (n == 3):
            raise RuntimeError(f"{where}(): pool {words[i]} {k[i]} too large relative to input "
                               f"{words[i]} {size[i]}")
    lead = tuple(xd.shape[:-n])
    if min(out) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                           f"{list(lead + out)}")
    batch, channels = (1, xd.shape[0]) if xd.ndim == n + 1 else xd.shape[:2]
    sd = samples._data
    if sd.dtype != xd.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if sd.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {sd.ndim}")
    if sd.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if sd.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if sd.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got {sd.shape[2]}.")
    if not _dtype.is_floating_np(xd.dtype):
        raise NotImplementedError(
            f'"{_NAMES[n]}_out_frame" not implemented for \'{type_name(input)}\'')
    return batch, channels


def _starts(xp: Any, u: Any, size: int, out: int, k: int) -> Any:
    """(N, C, out) window starts along a dim of `size` for the samples u (N, C), computed in
    u's dtype with torch's roundings (see the module doc); clipped into the dim for samples
    far outside [0, 1), where torch's kernel would read past it."""
    i64 = _dtype.int64.np
    starts = xp.full(u.shape + (out,), size - k, dtype=i64)
    if out > 1:
        dt = u.dtype
        alpha = xp.asarray(size - k, dtype=dt) / xp.asarray(out - 1, dtype=dt)
        steps = xp.arange(out - 1).astype(dt)
        first = ((steps + u[..., None]) * alpha).astype(i64)
        starts[..., :-1] = first - (u * alpha).astype(i64)[..., None]
    return xp.clip(starts, 0, size - k)


def _first_max(xp: Any, cols: Any) -> Any:
    """The index of each window's max along the last axis: the first of ties, the last NaN
    (torch's scan keeps taking NaNs)."""
    k = xp.argmax(cols, axis=-1)
    nan = xp.isnan(cols)
    last = cols.shape[-1] - 1 - xp.argmax(xp.flip(nan, axis=-1), axis=-1)
    return xp.where(nan.any(axis=-1), last, k)


def _pool_arrays(xp: Any, x: Any, u: Any, k: Ints, out: Ints) -> Tuple[Any, Any]:
    """(maxima, flat indices), each (N, C, *out), of x (N, C, *size) for samples u (N, C, n)."""
    n = len(k)
    batch, channels = x.shape[:2]
    size = x.shape[2:]
    flat: Any = 0
    for d in range(n):
        # torch's 2-d op reads its samples as (W, H), its 3-d op as (T, H, W)
        pick = n - 1 - d if n == 2 else d
        pos = _starts(xp, u[..., pick], size[d], out[d], k[d])[..., None] + xp.arange(k[d])
        shape = (batch, channels) + tuple(out[j] if j == d else 1 for j in range(n)) + \
            tuple(k[j] if j == d else 1 for j in range(n))
        flat = flat * size[d] + pos.reshape(shape)
    p, w = math.prod(out), math.prod(k)
    flat = flat.reshape(batch, channels, p, w)
    cols = xp.take_along_axis(x.reshape(batch, channels, math.prod(size)),
                              flat.reshape(batch, channels, p * w), axis=2)
    cols = cols.reshape(batch, channels, p, w)
    best = _first_max(xp, cols)[..., None]
    vals = xp.take_along_axis(cols, best, axis=-1)[..., 0]
    idx = xp.take_along_axis(flat, best, axis=-1)[..., 0]
    return (xp.ascontiguousarray(vals.reshape((batch, channels) + out)),
            xp.ascontiguousarray(idx.reshape((batch, channels) + out)))


# ---- the nodes --------------------------------------------------------------------------------
def _scatter(g: Tensor, x_shape: Ints, idx: Any, n: int) -> Any:
    """zeros(x_shape) with each output's gradient added at its flat index in its plane."""
    xp = g._backend
    rows = math.prod(x_shape[:-n])
    vol = math.prod(x_shape[-n:])
    per = math.prod(g.shape[-n:])
    z = xp.zeros((rows, vol), dtype=g._data.dtype)
    xp.add_at(z, (xp.arange(rows).reshape(rows, 1), idx.reshape(rows, per)),
              g._data.reshape(rows, per))
    return z.reshape(x_shape)


def _fmp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x, idx = saved.self, saved.result1
    n = len(ctx[0])
    z = _scatter(g, tuple(x.shape), idx._data, n)
    spec = FRACTIONAL_MAX_POOL3D_BACKWARD if n == 3 else FRACTIONAL_MAX_POOL2D_BACKWARD
    return spec.record(z, (g, x), n, indices=idx)


def _fmp_bb(gg: Tensor, saved: Any, n: int) -> Any:
    idx = saved.indices
    lead = tuple(idx.shape[:-n])
    planes = gg.reshape(lead + (math.prod(gg.shape[-n:]),))
    picked = planes.gather(-1, idx.reshape(lead + (math.prod(idx.shape[-n:]),)))
    return picked.reshape(tuple(idx.shape)), None


_GETTERS = {"kernel_size": lambda saved, ctx: ctx[0], "output_size": lambda saved, ctx: ctx[1]}
FRACTIONAL_MAX_POOL2D = node("FractionalMaxPool2DBackward0", _fmp_bw, saved=("self", "result1"),
                             getters=_GETTERS)
FRACTIONAL_MAX_POOL3D = node("FractionalMaxPool3DBackward0", _fmp_bw, saved=("self", "result1"),
                             getters=_GETTERS)
FRACTIONAL_MAX_POOL2D_BACKWARD = node("FractionalMaxPool2DBackwardBackward0", _fmp_bb,
                                      saved=("indices",))
FRACTIONAL_MAX_POOL3D_BACKWARD = node("FractionalMaxPool3DBackwardBackward0", _fmp_bb,
                                      saved=("indices",))


def _fractional(input: Tensor, kernel_size: Any, output_size: Any, output_ratio: Any,
                samples: Optional[Tensor], n: int) -> Tuple[Tensor, Tensor]:
    out_given = _output_size(input, output_size, output_ratio, n)
    samples = _samples(input, samples, n)
    if samples.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{_NAMES[n]}' is not differentiable with respect to "
                           "argument 'random_samples'. This input cannot have requires_grad "
                           "True.")
    k = _sizes(kernel_size, n, "kernel_size")
    out = _sizes(out_given, n, "output_size")
    batch, channels = _check(input, k, out, samples, n)
    xd = input._data
    x = xd if xd.ndim == n + 2 else xd[None]
    vals, idx = _pool_arrays(input._backend, x, samples._data[:batch], k, out)
    shape = tuple(xd.shape[:-n]) + out
    indices = const(idx.reshape(shape))
    spec = FRACTIONAL_MAX_POOL3D if n == 3 else FRACTIONAL_MAX_POOL2D
    res = spec.record(vals.reshape(shape), (input,), (k, out), self=input, result1=indices)
    return res, indices


# ---- the ops ----------------------------------------------------------------------------------
@op(functional="fractional_max_pool2d_with_indices",
    grad_fn=("FractionalMaxPool2DBackward0", "FractionalMaxPool2DBackwardBackward0"))
def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: IntOrTuple,
                                       output_size: Optional[IntOrTuple] = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Optional[Tensor] = None
                                       ) -> Tuple[Tensor, Tensor]:
    """fractional_max_pool2d's maxima and their flat indices, always both (return_indices is
    ignored).

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> u = rustgrad.full((1, 1, 2), 0.5)
        >>> rustgrad.nn.functional.fractional_max_pool2d_with_indices(
        ...     x, 2, output_size=2, _random_samples=u)[1]
        tensor([[[[ 5,  7],
                  [13, 15]]]])
    """
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


@op(functional="fractional_max_pool2d", grad_fn="FractionalMaxPool2DBackward0",
    autocast=dict(cpu="fp32"))
def fractional_max_pool2d(input: Tensor, kernel_size: IntOrTuple,
                          output_size: Optional[IntOrTuple] = None, output_ratio: Any = None,
                          return_indices: bool = False,
                          _random_samples: Optional[Tensor] = None) -> Any:
    """The max of pseudo-randomly placed kernel_size windows of (N, C, H, W) or (C, H, W)
    input, output_size of them per plane (and each max's flat index in its (H, W) plane).

    Args:
        kernel_size (int or pair of ints): the window's size.
        output_size (int or pair of ints, optional): the output's (H, W).
        output_ratio (pair of floats, optional): the output's size as a fraction of the
            input's, when output_size is not given.
        return_indices (bool, optional): also return each max's flat index (for
            max_unpool2d). Default: False.
        _random_samples (Tensor, optional): (N, C, 2) samples in [0, 1) placing the windows
            (for W, then H), of the input's dtype; drawn from rustgrad's generator when not
            given. The same samples give torch's windows.

    Example::

        >>> x = rustgrad.arange(16.).view(1, 1, 4, 4)
        >>> u = rustgrad.full((1, 1, 2), 0.5)
        >>> rustgrad.nn.functional.fractional_max_pool2d(x, 2, output_size=2, _random_samples=u)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    res = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return res if return_indices else res[0]


@op(functional="fractional_max_pool3d_with_indices",
    grad_fn=("FractionalMaxPool3DBackward0", "FractionalMaxPool3DBackwardBackward0"))
def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: IntOrTuple,
                                       output_size: Optional[IntOrTuple] = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Optional[Tensor] = None
                                       ) -> Tuple[Tensor, Tensor]:
    """fractional_max_pool3d's maxima and their flat indices, always both (return_indices is
    ignored).

    Example::

        >>> x = rustgrad.arange(8.).view(1, 1, 2, 2, 2)
        >>> u = rustgrad.full((1, 1, 3), 0.5)
        >>> rustgrad.nn.functional.fractional_max_pool3d_with_indices(
        ...     x, 1, output_size=1, _random_samples=u)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


@op(functional="fractional_max_pool3d", grad_fn="FractionalMaxPool3DBackward0",
    autocast=dict(cpu="fp32"))
def fractional_max_pool3d(input: Tensor, kernel_size: IntOrTuple,
                          output_size: Optional[IntOrTuple] = None, output_ratio: Any = None,
                          return_indices: bool = False,
                          _random_samples: Optional[Tensor] = None) -> Any:
    """The max of pseudo-randomly placed kernel_size windows of (N, C, D, H, W) or
    (C, D, H, W) input, output_size of them per volume (and each max's flat index in its
    (D, H, W) volume).

    Args:
        kernel_size (int or tuple of three ints): the window's size.
        output_size (int or tuple of three ints, optional): the output's (D, H, W).
        output_ratio (float or tuple of three floats, optional): the output's size as a
            fraction of the input's, when output_size is not given.
        return_indices (bool, optional): also return each max's flat index (for
            max_unpool3d). Default: False.
        _random_samples (Tensor, optional): (N, C, 3) samples in [0, 1) placing the windows
            (for D, H, W), of the input's dtype; drawn from rustgrad's generator when not
            given. The same samples give torch's windows.

    Example::

        >>> x = rustgrad.arange(27.).view(1, 1, 3, 3, 3)
        >>> u = rustgrad.full((1, 1, 3), 0.5)
        >>> rustgrad.nn.functional.fractional_max_pool3d(x, 2, output_size=1,
        ...                                              _random_samples=u).flatten()
        tensor([26.])
    """
    res = _fractional(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return res if return_indices else res[0]
