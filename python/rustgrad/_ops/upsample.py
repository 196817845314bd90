"""Resampling: interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area;
antialias for bilinear/bicubic) and the deprecated upsample / upsample_nearest / upsample_bilinear.

Every mode but area is separable: along each spatial dim an output element is a weighted sum of
a few input elements (taps), with indices and weights computed as torch's CPU kernels do (in
float32 for float32 input, so the sample positions agree). The forward is one gather per tap
and dim; the backward is its adjoint, a scatter-add written as gathers (each tap's indices are
non-decreasing, so each input element collects a contiguous run of outputs). Both are recorded
nodes (UpsampleBilinear2DBackward0 and its UpsampleBilinear2DBackwardBackward0), each the
other's backward, so gradients of any order work. Where torch's backward kernel picks its
indices differently from its forward (nearest's size shortcuts, bicubic's same-size copy,
antialias's kept dims), the backward follows torch's backward. area is adaptive average
pooling, as torch's.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from .conv import type_name
from .pool import adaptive_avg_pool1d, adaptive_avg_pool2d

# (mode, spatial dims) -> torch's node name
_NAMES = {
    ("nearest", 1): "UpsampleNearest1DBackward0",
    ("nearest", 2): "UpsampleNearest2DBackward0",
    ("nearest", 3): "UpsampleNearest3DBackward0",
    ("nearest-exact", 1): "UpsampleNearestExact1DBackward0",
    ("nearest-exact", 2): "UpsampleNearestExact2DBackward0",
    ("nearest-exact", 3): "UpsampleNearestExact3DBackward0",
    ("linear", 1): "UpsampleLinear1DBackward0",
    ("bilinear", 2): "UpsampleBilinear2DBackward0",
    ("trilinear", 3): "UpsampleTrilinear3DBackward0",
    ("bicubic", 2): "UpsampleBicubic2DBackward0",
    ("bilinear-aa", 2): "UpsampleBilinear2DAaBackward0",
    ("bicubic-aa", 2): "UpsampleBicubic2DAaBackward0",
}
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"
_CUBIC_A = -0.75
# a dim's plan: (input size, output size, indices (taps, out), weights (taps, out) or None)
Plan = Tuple[int, int, Any, Any]


# ---- sample positions, as torch's compute_indices_weights_* ---------------------------------
def _scale(xp: Any, dt: Any, n_in: int, n_out: int, align_corners: bool,
           scale: Optional[float]) -> Any:
    """torch's area_pixel_compute_scale in the kernel's dtype `dt`."""
    if align_corners:
        return dt.type(n_in - 1) / dt.type(n_out - 1) if n_out > 1 else dt.type(0)
    if scale is not None and scale > 0:
        return dt.type(1.0 / scale)
    return dt.type(n_in) / dt.type(n_out)


def _nearest_plan(xp: Any, n_in: int, n_out: int, scale: Optional[float], exact: bool,
                  backward: bool = False) -> Plan:
    """torch's nearest indices; its backward kernel (nearest_idx) copies when the sizes are equal
    and halves the index when the output is twice the input, whatever the scale, where the
    forward of 1-d and 3-d input computes with the scale."""
    f32 = _dtype.float32.np
    if backward and not exact and n_out in (n_in, 2 * n_in):
        return n_in, n_out, (xp.arange(n_out) // (n_out // n_in))[None], None
    sc = _scale(xp, f32, n_in, n_out, False, scale)
    i = xp.arange(n_out, dtype=f32)
    src = (i + f32.type(0.5)) * sc if exact else i * sc
    idx = xp.minimum(xp.floor(src).astype(_dtype.int64.np), n_in - 1)
    return n_in, n_out, idx[None], None


def _guard(xp: Any, src: Any, n_in: int) -> Tuple[Any, Any]:
    """torch's guard_index_and_lambda: the floor index (at most n_in - 1) and the fraction."""
    idx = xp.minimum(xp.floor(src).astype(_dtype.int64.np), n_in - 1)
    lam = xp.clip(src - idx.astype(src.dtype), 0, 1)
    return idx, lam


def _linear_plan(xp: Any, dt: Any, n_in: int, n_out: int, align_corners: bool,
                 scale: Optional[float]) -> Plan:
    i = xp.arange(n_out, dtype=dt)
    if n_out == n_in and not align_corners:  # torch copies
        idx = xp.arange(n_out)
        return n_in, n_out, xp.stack([idx, idx]), xp.stack([xp.ones(n_out, dt), xp.zeros(n_out, dt)])
    sc = _scale(xp, dt, n_in, n_out, align_corners, scale)
    if align_corners:
        src = sc * i
    else:
        src = xp.maximum(sc * (i + dt.type(0.5)) - dt.type(0.5), dt.type(0))
    i0, lam1 = _guard(xp, src, n_in)
    i1 = i0 + (i0 < n_in - 1)
    return n_in, n_out, xp.stack([i0, i1]), xp.stack([1 - lam1, lam1])


def _cubic_plan(xp: Any, dt: Any, n_in: int, n_out: int, align_corners: bool,
                scale: Optional[float]) -> Plan:
    i = xp.arange(n_out, dtype=dt)
    sc = _scale(xp, dt, n_in, n_out, align_corners, scale)
    src = sc * i if align_corners else sc * (i + dt.type(0.5)) - dt.type(0.5)
    i0, t = _guard(xp, src, n_in)
    a = dt.type(_CUBIC_A)

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = dt.type(1)
    w = xp.stack([far(t + one), near(t), near(one - t), far(2 * one - t)])
    idx = xp.stack([xp.clip(i0 - 1 + k, 0, n_in - 1) for k in range(4)])
    return n_in, n_out, idx, w


def _aa_plan(xp: Any, dt: Any, n_in: int, n_out: int, align_corners: bool,
             scale: Optional[float], cubic: bool) -> Plan:
    """torch's antialiased taps (as PIL's): the triangle or Keys (a = -0.5) filter stretched by
    the scale when downsampling, normalized per output; taps past a window weigh 0."""
    sc = _scale(xp, dt, n_in, n_out, align_corners, scale)
    half = dt.type(2.0 if cubic else 1.0)
    support = half * sc if sc >= 1 else half
    taps = int(math.ceil(support)) * 2 + 1
    inv = dt.type(1) / sc if sc >= 1 else dt.type(1)
    center = sc * (xp.arange(n_out, dtype=dt) + dt.type(0.5))
    lo = xp.maximum((center - support + dt.type(0.5)).astype(_dtype.int64.np), 0)
    size = xp.clip(xp.minimum((center + support + dt.type(0.5)).astype(_dtype.int64.np), n_in)
                   - lo, 0, taps)
    j = xp.arange(taps)[:, None]
    x = xp.abs((j + lo - center + dt.type(0.5)) * inv).astype(dt)
    if cubic:
        a = dt.type(-0.5)
        w = xp.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                     xp.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0))
    else:
        w = xp.where(x < 1, 1 - x, 0)
    w = xp.where(j < size, w, 0).astype(dt)
    total = w.sum(axis=0)
    w = w / xp.where(total != 0, total, 1)
    return n_in, n_out, xp.minimum(j + lo, n_in - 1), w


# ---- the separable map and its adjoint on arrays ----------------------------------------------
def _along(w: Any, axis: int, ndim: int) -> Any:
    return w.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _resample_array(xp: Any, a: Any, plans: Sequence[Optional[Plan]]) -> Any:
    for d, plan in enumerate(plans):
        if plan is None:
            continue
        axis = 2 + d
        _, _, idx, w = plan
        if w is None:
            a = xp.take(a, idx[0], axis=axis)
            continue
        out = None
        for k in range(idx.shape[0]):
            term = xp.take(a, idx[k], axis=axis)
            term *= _along(w[k].astype(a.dtype), axis, a.ndim)
            if out is None:
                out = term
            else:
                out += term
        a = out
    return xp.ascontiguousarray(a)


def _adjoint_array(xp: Any, g: Any, plans: Sequence[Optional[Plan]]) -> Any:
    """The transpose of _resample_array: each input element sums the (weighted) outputs that
    sampled it, gathered run by run (a tap's indices never decrease)."""
    for d, plan in enumerate(plans):
        if plan is None:
            continue
        axis = 2 + d
        n_in, n_out, idx, w = plan
        shape = list(g.shape)
        shape[axis] = n_in
        out = xp.zeros(tuple(shape), dtype=g.dtype)
        targets = xp.arange(n_in)
        for k in range(idx.shape[0]):
            start = xp.searchsorted(idx[k], targets, side="left")
            count = xp.searchsorted(idx[k], targets, side="right") - start
            gw = g if w is None else g * _along(w[k].astype(g.dtype), axis, g.ndim)
            for j in range(int(count.max()) if n_in else 0):
                piece = xp.take(gw, xp.minimum(start + j, n_out - 1), axis=axis)
                out += xp.where(_along(count > j, axis, g.ndim), piece, 0)
        g = out
    return g


# ctx of both nodes: (forward plans, backward plans, the pair of nodes). torch's nearest
# backward picks its indices its own way (see _nearest_plan), so the two maps are not always
# each other's transpose; each node's backward is the other map, as torch's.
Nodes = Tuple[Any, Any]  # (the resampling's node, its backward's)


def _resample(x: Tensor, fwd: Sequence[Optional[Plan]], bwd: Sequence[Optional[Plan]],
              nodes: Nodes) -> Tensor:
    out = _resample_array(x._backend, x._data, fwd)
    return nodes[0].record(out, (x,), (fwd, bwd, nodes))


def _resample_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _adjoint(g, *ctx)


def _adjoint(g: Tensor, fwd: Sequence[Optional[Plan]], bwd: Sequence[Optional[Plan]],
             nodes: Nodes) -> Tensor:
    out = _adjoint_array(g._backend, g._data, bwd)
    return nodes[1].record(out, (g,), (fwd, bwd, nodes))


def _adjoint_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _resample(g, *ctx)


# (mode, spatial dims) -> its nodes: UpsampleBilinear2DBackward0 and the node of its backward,
# UpsampleBilinear2DBackwardBackward0
_NODES = {key: (node(name, _resample_bw),
                node(name.replace("Backward0", "BackwardBackward0"), _adjoint_bw))
          for key, name in _NAMES.items()}


# ---- interpolate ------------------------------------------------------------------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or type(v).__name__.startswith(("int", "uint"))


def _output_size(x: Tensor, size: Any, scale_factor: Any,
                 recompute: Optional[bool]) -> Tuple[List[int], List[Optional[float]]]:
    """torch's size / scale_factor handling: the output sizes and the scales the kernel uses
    (None where the size decides)."""
    dim = x.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales: List[Optional[float]] = [None] * dim
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(x.shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_int(v) for v in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(v) for v in size]}"
                )
            out = [int(v) for v in size]
        elif not _is_int(size):
            raise TypeError(
                f"upsample(): received an invalid combination of arguments: size must be a "
                f"tuple of ints, not {type(size).__name__}"
            )
        else:
            out = [int(size)] * dim
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return out, scales
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dim:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {list(x.shape[2:])} and scale_factor of "
                f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                "format and scale_factor in (s1, s2, ...,sK) format."
            )
        factors = [float(s) for s in scale_factor]
    else:
        factors = [float(scale_factor)] * dim
    out = [int(n * s) for n, s in zip(x.shape[2:], factors)]
    return out, scales if recompute else list(factors)


def _check_sizes(x: Tensor, out: List[int]) -> None:
    names = "DHW"[3 - len(out):]
    if any(n <= 0 for n in list(x.shape[2:]) + out):
        ins = ", ".join(f"{c}: {n}" for c, n in zip(names, x.shape[2:]))
        outs = ", ".join(f"{c}: {n}" for c, n in zip(names, out))
        joint = " and " if len(out) == 1 else " "
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({ins}){joint}"
            f"output ({outs})"
        )
    if x.shape[1] == 0 or 0 in x.shape[2:]:
        raise RuntimeError(
            f"Non-empty {x.ndim}D data tensor expected but got a tensor with sizes "
            f"{list(x.shape)}"
        )


def _check_dtype(x: Tensor, mode: str) -> None:
    kind = x._data.dtype.kind
    if _dtype.is_floating_np(x._data.dtype) or (
            kind == "u" and x._data.dtype.itemsize == 1 and mode.startswith("nearest")):
        return
    if mode.startswith("nearest"):
        kernel = "upsample_nearest2d_channels_last" if x.ndim == 4 else \
            "compute_indices_weights_nearest"
    elif mode == "bilinear":
        kernel = "upsample_bilinear2d_channels_last"
    elif mode == "bicubic":
        kernel = "compute_indices_weights_cubic"
    else:
        kernel = "compute_indices_weights_linear"
    raise NotImplementedError(f'"{kernel}" not implemented for \'{type_name(x)}\'')


def _area(x: Tensor, out: List[int]) -> Tensor:
    if x.ndim == 3:
        return adaptive_avg_pool1d(x, out[0])
    if x.ndim == 4:
        return adaptive_avg_pool2d(x, out)
    raise NotImplementedError("interpolate: mode 'area' of 5-D input (adaptive_avg_pool3d)")


@op(functional="interpolate", grad_fn=tuple(f.name for f, _ in _NODES.values())
    + tuple(b.name for _, b in _NODES.values()), autocast=dict(cuda="fp32"))
def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: Optional[bool] = None,
                recompute_scale_factor: Optional[bool] = None,
                antialias: bool = False) -> Tensor:
    """input resampled to `size` or by `scale_factor` (modes nearest, nearest-exact, linear,
    bilinear, bicubic, trilinear, area; antialias for bilinear/bicubic)."""
    x = input
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    out, scales = _output_size(x, size, scale_factor,
                               recompute_scale_factor or (mode == "area" and size is None))
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and x.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
            "a 4-D tensor as input"
        )
    if mode == "lanczos":
        raise NotImplementedError("rustgrad: interpolate(mode='lanczos') is not supported; use "
                                  "mode='bicubic' with antialias=True")
    dim = x.ndim - 2
    if mode == "area" and 1 <= dim <= 3:
        return _area(x, out)
    nodes = _NODES.get((mode + ("-aa" if antialias else ""), dim))
    if nodes is None:
        wants = {"linear": 3, "bilinear": 4, "trilinear": 5}.get(mode)
        if wants is not None and 3 <= x.ndim <= 5:
            raise NotImplementedError(
                f"Got {x.ndim}D input, but {mode} mode needs {wants}D input"
            )
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the "
            f"modes: {_MODES} (got {mode})"
        )
    _check_sizes(x, out)
    _check_dtype(x, mode)
    xp = x._backend
    dt = x._data.dtype if x._data.dtype == _dtype.float64.np else _dtype.float32.np
    fwd: List[Optional[Plan]] = []
    bwd: List[Optional[Plan]] = []
    for n_in, n_out, sc in zip(x.shape[2:], out, scales):
        if mode.startswith("nearest"):
            exact = mode == "nearest-exact"
            # torch's 2-d kernel picks the forward's indices as its backward does
            plan: Optional[Plan] = _nearest_plan(xp, n_in, n_out, sc, exact, dim == 2)
            bwd.append(_nearest_plan(xp, n_in, n_out, sc, exact, backward=True))
        elif antialias:
            plan = _aa_plan(xp, dt, n_in, n_out, bool(align_corners), sc, mode == "bicubic")
            bwd.append(plan)
            if n_in == n_out:  # torch's forward (not its backward) skips a dim that keeps its size
                plan = None
        else:
            maker = _cubic_plan if mode == "bicubic" else _linear_plan
            plan = maker(xp, dt, n_in, n_out, bool(align_corners), sc)
            bwd.append(plan)
        fwd.append(plan)
    if mode == "bicubic" and not antialias and list(x.shape[2:]) == out:
        bwd = [None] * dim  # torch's bicubic backward copies when no size changes
    return _resample(x, fwd, bwd, nodes)


def _deprecated(name: str) -> None:
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=3)


@op(functional="upsample", autocast=dict(cuda="fp32"))
def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: Optional[bool] = None) -> Tensor:
    """Deprecated alias of interpolate (with torch's warning)."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


@op(functional="upsample_nearest", autocast=dict(cuda="fp32"))
def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: interpolate with mode='nearest' (with torch's warning)."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


@op(functional="upsample_bilinear", autocast=dict(cuda="fp32"))
def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: interpolate with mode='bilinear', align_corners=True (with torch's warning)."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
