"""Spatial transformers: affine_grid (torch's affine_grid_generator) and grid_sample (torch's
grid_sampler) over 4-d and 5-d input.

grid_sample reads, for every output point, the input at the point's location (the grid's last
dim is x, y[, z], that is W, H[, D] of the input): the location is unnormalized from [-1, 1] as
torch's kernels do (align_corners or not), moved in bounds by the padding mode (border clips,
reflection reflects then clips, zeros leaves it and reads 0 outside), and read through a few
taps per dim: 1 (nearest), 2 (bilinear) or 4 (bicubic, cubic convolution with A = -0.75 over the
unpadded location, each tap padded on its own). A point's corners are the product of the dims'
taps: the forward gathers the input at every corner's flat index and sums them weighted.

The backward (GridSampler2DBackward0 / GridSampler3DBackward0) is written in rustgrad ops over
the same corners: the input's gradient is a scatter-add of the weighted output gradient, the
grid's the gathered input times the weights' derivatives, times the derivative of the location
(the unnormalizing scale, 0 where torch's clip holds it, -1 where reflection flips it). The
corners' indices and the location's derivative are constants of the grid's values; a corner's
weight is a polynomial in the location's fraction, which under create_graph is made a function
of the grid tensor, so double backward works.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const, is_grad_enabled, same_device
from .conv import type_name
from .gather import _gather_raw, scatter_add_into_zeros
from .joins import stack

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75
_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


# ---- locations -------------------------------------------------------------------------------
def _clip(xp: Any, x: Any, size: int) -> Tuple[Any, Any]:
    """x clipped to [0, size - 1] and its derivative (0 on the borders too, as torch's)."""
    hi = x.dtype.type(size - 1)
    grad = ((x > 0) & (x < hi)).astype(x.dtype)
    return xp.minimum(xp.maximum(x, x.dtype.type(0)), hi), grad


def _reflect(xp: Any, x: Any, size: int, align: bool) -> Tuple[Any, Any]:
    """x reflected about the borders (the pixel centres at the ends, or their outer edges
    without align_corners) and its derivative (+-1), as torch's kernels."""
    dt = x.dtype.type
    twice_span = 2 * (size - 1) if align else 2 * size
    if twice_span == 0:
        return xp.zeros_like(x), xp.zeros_like(x)
    shifted = x if align else x + dt(0.5)
    span = dt(twice_span)
    a = xp.abs(shifted)
    extra = a - xp.trunc(a / span) * span
    flipped = span - extra
    more = extra > flipped
    out = xp.where(more, flipped, extra)
    if not align:
        out = out - dt(0.5)
    sign = xp.where(more != (shifted < 0), dt(-1), dt(1))
    return out, sign


def _scale(dt: Any, size: int, align: bool) -> Any:
    return dt.type((size - 1) / 2 if align else size / 2)


def _unnormalize(coord: Any, size: int, align: bool) -> Any:
    x = (coord + coord.dtype.type(1)) * _scale(coord.dtype, size, align)
    return x if align else x - coord.dtype.type(0.5)


def _pad_location(xp: Any, x: Any, size: int, padding: str, align: bool) -> Tuple[Any, Any]:
    """The padded location and its derivative by the unpadded one (None: 1)."""
    if padding == "border":
        return _clip(xp, x, size)
    if padding == "reflection":
        r, sign = _reflect(xp, x, size, align)
        c, grad = _clip(xp, r, size)
        return c, sign * grad
    return x, None


# A dim's taps: (tap positions [(N, P) int arrays], the fraction (N, P) or None for nearest,
# the location's derivative by the grid coordinate (N, P) or a scalar)
Taps = Tuple[List[Any], Any, Any]


def _taps(xp: Any, coord: Any, size: int, mode: str, padding: str, align: bool) -> Taps:
    i64 = _dtype.int64.np
    x = _unnormalize(coord, size, align)
    scale = float(_scale(coord.dtype, size, align))  # a Python number: no device of its own
    if mode == "bicubic":
        i0 = xp.floor(x)
        frac = x - i0
        pos = []
        for a in range(-1, 3):
            p, _ = _pad_location(xp, i0 + x.dtype.type(a), size, padding, align)
            pos.append(p.astype(i64))
        return pos, frac, scale
    x, grad = _pad_location(xp, x, size, padding, align)
    mult = scale if grad is None else grad * scale
    if mode == "nearest":
        return [xp.rint(x).astype(i64)], None, mult
    i0 = xp.floor(x)
    frac = x - i0
    i0 = i0.astype(i64)
    return [i0, i0 + 1], frac, mult


def _tap_weights(frac: Any, mode: str) -> List[Any]:
    """The taps' weights, polynomials in the fraction (arrays or tensors alike)."""
    if mode == "nearest":
        return [1]
    if mode == "bilinear":
        return [1 - frac, frac]
    a = _CUBIC_A

    def near(x: Any) -> Any:  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Any) -> Any:  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(frac + 1), near(frac), near(1 - frac), far(2 - frac)]


def _tap_derivatives(frac: Any, mode: str) -> List[Any]:
    """d(weight)/d(fraction) of each tap."""
    if mode == "nearest":
        return [0]
    if mode == "bilinear":
        return [-1, 1]
    a = _CUBIC_A

    def d_near(x: Any) -> Any:
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def d_far(x: Any) -> Any:
        return (3 * a * x - 10 * a) * x + 8 * a

    return [d_far(frac + 1), d_near(frac), -d_near(1 - frac), -d_far(2 - frac)]


class _Plan:
    """Where each output point reads: corners (K of them) of per-dim taps, their flat indices
    into the input's spatial dims (N, K, P), which are in bounds (N, K, P) and the per-dim
    fractions and location derivatives."""

    def __init__(self, xp: Any, grid: Any, sizes: Sequence[int], mode: str, padding: str,
                 align: bool) -> None:
        n, d = grid.shape[0], grid.shape[-1]
        p = 1
        for s in grid.shape[1:-1]:
            p *= s
        flat = grid.reshape(n, p, d)
        self.mode = mode
        self.taps: List[Taps] = []
        strides = []
        for i in range(d):  # grid order: x (the last spatial dim), y, z
            size = sizes[d - 1 - i]
            stride = 1
            for s in sizes[d - i:]:
                stride *= s
            strides.append(stride)
            self.taps.append(_taps(xp, flat[:, :, i], size, mode, padding, align))
        self.corners = list(itertools.product(*(range(len(t[0])) for t in self.taps)))
        index, inside = [], []
        for corner in self.corners:
            flat_index = 0
            ok = None
            for i, k in enumerate(corner):
                pos = self.taps[i][0][k]
                size = sizes[d - 1 - i]
                good = (pos >= 0) & (pos < size)
                ok = good if ok is None else ok & good
                flat_index = flat_index + xp.where(good, pos, 0) * strides[i]
            index.append(flat_index)
            inside.append(ok)
        self.index = xp.stack(index, axis=1)  # (N, K, P)
        self.inside = xp.stack(inside, axis=1)
        self.n, self.p, self.d = n, p, d

    def weights(self, fracs: Sequence[Any], join: Any, dim: Optional[int] = None) -> Any:
        """The corners' weights (dim None) or their derivatives by dim's fraction, stacked
        by `join` into (N, K, P); fracs are arrays or tensors."""
        per_dim = [_tap_weights(f, self.mode) for f in fracs]
        if dim is not None:
            per_dim[dim] = _tap_derivatives(fracs[dim], self.mode)
        out = []
        for corner in self.corners:
            w: Any = None
            for i, k in enumerate(corner):
                w = per_dim[i][k] if w is None else w * per_dim[i][k]
            out.append(w)
        return join(out)


def _gather_index(xp: Any, plan: _Plan, c: int) -> Any:
    n, k, p = plan.index.shape
    return xp.broadcast_to(plan.index.reshape(n, 1, k * p), (n, c, k * p))


def _sample_array(xp: Any, x: Any, plan: _Plan) -> Any:
    n, c = x.shape[:2]
    k = len(plan.corners)
    if plan.mode == "nearest":
        w = plan.inside.astype(x.dtype)
    else:
        fracs = [t[1] for t in plan.taps]
        w = plan.weights(fracs, lambda ws: xp.stack(ws, axis=1)) * plan.inside
    length = 1
    for s in x.shape[2:]:
        length *= s
    flat = x.reshape(n, c, length)
    vals = xp.take_along_axis(flat, _gather_index(xp, plan, c), axis=2).reshape(n, c, k, plan.p)
    return (vals * w.reshape(n, 1, k, plan.p).astype(x.dtype)).sum(axis=2)


# ---- the node ----------------------------------------------------------------------------------
def _fractions(plan: _Plan, grid: Tensor, differentiable: bool) -> List[Tensor]:
    """Each dim's fraction as a tensor: a constant, or (under create_graph) a function of the
    grid tensor with the fraction's value and the location's derivative."""
    out = []
    g3 = grid.reshape(plan.n, plan.p, plan.d) if differentiable else None
    for i, (_, frac, mult) in enumerate(plan.taps):
        f = const(frac)
        if differentiable and g3 is not None:
            gi = g3[:, :, i]
            m = mult if hasattr(mult, "shape") else grid._backend.full(frac.shape, mult)
            f = f + (gi - const(gi._data)) * const(m.astype(frac.dtype))
        out.append(f)
    return out


def _grid_sampler_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mode, padding, align = ctx
    x, grid = saved.input, saved.grid
    xp = g._backend
    plan = _Plan(xp, grid._data, x._data.shape[2:], mode, padding, align)
    n, c = x._data.shape[:2]
    k, p = len(plan.corners), plan.p
    inside = const(plan.inside.astype(g._data.dtype))
    fracs: List[Tensor] = []
    if mode != "nearest":
        fracs = _fractions(plan, grid, is_grad_enabled() and grid.requires_grad)
    gflat = g.reshape(n, c, 1, p)
    index = _gather_index(xp, plan, c)
    length = 1
    for s in x._data.shape[2:]:
        length *= s
    gx = ggrid = None
    if x.requires_grad:
        w = inside if mode == "nearest" else plan.weights(fracs, lambda ws: stack(ws, 1)) * inside
        src = (gflat * w.reshape(n, 1, k, p)).reshape(n, c, k * p)
        gx = scatter_add_into_zeros(src, (n, c, length), 2, index).reshape(x._data.shape)
    if grid.requires_grad:
        if mode == "nearest":
            ggrid = const(xp.zeros_like(grid._data))
        else:
            xf = x.reshape(n, c, length)
            vals = _gather_raw(xf, 2, index).reshape(n, c, k, p)
            gv = (gflat * vals).sum(1)  # (N, K, P)
            parts = []
            for i in range(plan.d):
                dw = plan.weights(fracs, lambda ws: stack(ws, 1), dim=i) * inside
                mult = plan.taps[i][2]
                mult = const(mult) if hasattr(mult, "shape") else float(mult)
                parts.append((gv * dw).sum(1) * mult)
            ggrid = stack(parts, -1).reshape(grid._data.shape)
    if mode == "nearest" and is_grad_enabled():
        # torch's gradients come from a node over (grad, input, grid), so they require grad
        # with either; nearest's depend on grad alone: a zero term ties them to the others
        tie = [t.sum() * 0.0 for t in (x, grid) if t.requires_grad]
        gx = None if gx is None else gx + sum(tie[1:], tie[0])
        ggrid = None if ggrid is None else ggrid + sum(tie[1:], tie[0])
    return gx, ggrid


_GETTERS = {
    "interpolation_mode": lambda s, c: _MODES.index(c[0]) if c[0] != "nearest" else 1,
    "padding_mode": lambda s, c: _PADDINGS.index(c[1]),
    "align_corners": lambda s, c: c[2],
}
GRID_SAMPLER_2D = node("GridSampler2DBackward0", _grid_sampler_bw, saved=("input", "grid"),
                       getters=_GETTERS)
GRID_SAMPLER_3D = node("GridSampler3DBackward0", _grid_sampler_bw, saved=("input", "grid"),
                       getters=_GETTERS)
_MODE_ENUM = {0: "bilinear", 1: "nearest", 2: "bicubic"}


def _check(input: Tensor, grid: Tensor, mode: str) -> None:
    """torch's grid_sampler checks, in torch's order."""
    xs, gs = list(input.shape), list(grid.shape)
    same_device(input._data, grid._data)
    if gs[-1:] != [len(xs) - 2]:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {len(xs) - 2} in last dimension, but "
            f"got grid with sizes {gs}")
    if xs[0] != gs[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {xs} and grid with sizes {gs}")
    want = 4 if len(xs) == 4 else 5
    if len(xs) != want or len(gs) != want:
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of dimensions, "
            f"but got input with sizes {xs} and grid with sizes {gs}")
    for i in range(2, len(xs)):
        if xs[i] == 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input "
                f"has sizes {xs} with dimension {i} being empty")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {type_name(input)} but found {type_name(grid)}")
    if not _dtype.is_floating_np(input._data.dtype):
        kernel = "grid_sampler_2d_cpu_kernel_impl" if len(xs) == 4 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{type_name(input)}\'')
    if mode == "bicubic" and len(xs) == 5:
        # torch 2.15 runs the 3-d kernel on an undefined mode here; refused instead
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


@op(function="grid_sampler", grad_fn=("GridSampler2DBackward0", "GridSampler3DBackward0"),
    autocast=dict(cuda="promote", cpu="fp32"))
def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """input sampled at grid's locations (modes 0 bilinear, 1 nearest, 2 bicubic; padding 0
    zeros, 1 border, 2 reflection): the op behind nn.functional.grid_sample."""
    mode = _MODE_ENUM[int(interpolation_mode)]
    padding = _PADDINGS[int(padding_mode)]
    _check(input, grid, mode)
    xp = input._backend
    align = bool(align_corners)
    plan = _Plan(xp, grid._data, input._data.shape[2:], mode, padding, align)
    out = _sample_array(xp, input._data, plan)
    n, c = input._data.shape[:2]
    out = xp.ascontiguousarray(out.reshape((n, c) + tuple(grid._data.shape[1:-1])))
    spec = GRID_SAMPLER_2D if input.ndim == 4 else GRID_SAMPLER_3D
    return spec.record(out, (input, grid), (mode, padding, align), input=input, grid=grid)


@op(functional="grid_sample")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: Optional[bool] = None) -> Tensor:
    """input (N, C, H, W) or (N, C, D, H, W) sampled at the locations in grid (N, H', W', 2) or
    (N, D', H', W', 3), in [-1, 1] (modes bilinear, nearest, bicubic; padding zeros, border,
    reflection)."""
    if mode not in _MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return grid_sampler(input, grid, {"bilinear": 0, "nearest": 1, "bicubic": 2}[mode],
                        _PADDINGS.index(padding_mode), align_corners)


# ---- affine_grid ---------------------------------------------------------------------------------
def _linspace_from_neg_one(xp: Any, dt: Any, steps: int, align: bool) -> Any:
    """torch's linspace(-1, 1, steps) (from both ends), scaled by (steps - 1) / steps without
    align_corners; 0 for one step."""
    if steps <= 1:
        return xp.zeros(1, dtype=dt)
    step = dt.type(2) / dt.type(steps - 1)
    i = xp.arange(steps)
    r = xp.where(i < steps // 2, dt.type(-1) + step * i.astype(dt),
                 dt.type(1) - step * (steps - 1 - i).astype(dt)).astype(dt)
    if not align:
        r = (r * dt.type(steps - 1)) / dt.type(steps)
    return r


def _base_grid(xp: Any, dt: Any, spatial: Sequence[int], align: bool) -> Any:
    """(prod(spatial), d + 1): each output point's [x, y(, z), 1]."""
    d = len(spatial)
    axes = [_linspace_from_neg_one(xp, dt, s, align) for s in spatial]  # D?, H, W
    mesh = xp.meshgrid(*axes, indexing="ij")
    cols = [mesh[d - 1 - i].reshape(-1) for i in range(d)]  # x, y, z
    cols.append(xp.ones(cols[0].shape, dtype=dt))
    return xp.stack(cols, axis=1)


def _affine_grid_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    base, n, m = ctx[:3]  # base (M, d + 1)
    d = base.shape[1] - 1
    gd = g.reshape(n, m, d)
    # grad_theta[b] = (base^T @ g[b])^T
    return gd.transpose(1, 2).matmul(const(base.astype(g._data.dtype)))


AFFINE_GRID = node("AffineGridGeneratorBackward0", _affine_grid_bw, getters={
    "size": lambda s, c: c[3], "align_corners": lambda s, c: c[4]})


@op(function="affine_grid_generator", grad_fn="AffineGridGeneratorBackward0")
def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """The sampling grid (N, H, W, 2) or (N, D, H, W, 3) of the affine maps theta (N, 2, 3)
    or (N, 3, 4): the op behind nn.functional.affine_grid."""
    size = tuple(int(s) for s in size)
    xp = theta._backend
    td = theta._data
    dt = td.dtype
    spatial = size[2:]
    base = _base_grid(xp, dt, spatial, bool(align_corners))
    n = size[0]
    d = len(spatial)
    if td.shape[0] != n:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {d + 1}] but got: [{td.shape[0]}, {d + 1}].")
    m = base.shape[0]
    out = xp.matmul(xp.broadcast_to(base, (n, m, d + 1)), td.transpose(0, 2, 1))
    out = xp.ascontiguousarray(out.reshape((n,) + spatial + (d,)))
    return AFFINE_GRID.record(out, (theta,), (base, n, m, size, bool(align_corners)))


@op(functional="affine_grid")
def affine_grid(theta: Tensor, size: List[int], align_corners: Optional[bool] = None) -> Tensor:
    """The flow field (N, H, W, 2) or (N, D, H, W, 3) that grid_sample reads for the affine
    maps theta (N, 2, 3) or (N, 3, 4), for an output of `size` (N, C, H, W) or (N, C, D, H, W)."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not _dtype.is_floating_np(theta._data.dtype):
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given = str(size)  # torch shows the size as it was passed
    size = list(size)
    shape = tuple(theta.shape)
    shown = f"torch.Size({list(shape)})"
    if len(size) == 4:
        if theta.ndim != 3 or shape[-2] != 2 or shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {shown}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.ndim != 3 or shape[-2] != 3 or shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {shown}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {given}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    return affine_grid_generator(theta, size, bool(align_corners))

