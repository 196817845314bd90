"""Statistics over samples: quantile/nanquantile, cov/corrcoef, histc/histogram, trapezoid
(trapz), cumulative_trapezoid and gradient.

Most are composites of recorded ops (sort, gather, lerp, mm, cat, ...), so their gradients, and
their double backward, come from those ops; the histograms count and are not differentiable."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, List, Optional, Sequence, Tuple

from .. import _creation, _dtype, return_types
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._util import _type_name, quiet_fp
from ._util import const as _const
from .gather import _gather_raw
from .joins import cat
from .linalg import mm
from .pointwise import lerp
from .sort import sort
from .views import diagonal, narrow

_INT64 = _dtype.int64.np
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _name_of(array: Any) -> str:
    return _type_name(_dtype.from_np(array.dtype))


def _as_float(t: Tensor) -> Tensor:
    """t, or t cast to the default dtype when it is integral or bool (as torch's composites)."""
    if _dtype.is_floating_np(t._data.dtype):
        return t
    return t.to(_dtype.get_default_dtype())


# ---- quantile, nanquantile -------------------------------------------------------------------
def _quantile(input: Tensor, q: Any, dim: Optional[int], keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    d = input._data
    xp = input._backend
    fname = "nanquantile()" if ignore_nan else "quantile()"
    if d.size == 0:
        raise RuntimeError(f"{fname} input tensor must be non-empty")
    if d.dtype not in (_dtype.float32.np, _dtype.float64.np):
        raise RuntimeError(f"{fname} input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{fname} q must be in the range [0, 1] but got {q}")
        qa = xp.asarray([q], dtype=d.dtype)
    else:
        if q._data.ndim > 1:
            raise RuntimeError(f"{fname} q must be a scalar or 1D tensor")
        if q._data.dtype != d.dtype:
            raise RuntimeError(f"{fname} q tensor must be same dtype as the input tensor")
        qa = q._data.reshape(-1)
        if qa.size and not bool(((qa >= 0) & (qa <= 1)).all()):
            raise RuntimeError(f"{fname} q values must be in the range [0, 1]")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{fname} interpolation must be one of linear, lower, higher, midpoint "
                           f"or nearest, but got {interpolation}")
    nd = d.ndim
    # S: input sorted along axis r (the flattened input as (1, ..., 1, n) when dim is None),
    # with the quantiles gathered along r into a new leading dim Q
    if dim is None:
        shape1 = (1,) * builtins.max(nd - 1, 0) + (d.size,)
        srt = sort(input.reshape(shape1), -1).values
        r = len(shape1) - 1
        drop_dims = tuple(builtins.range(1, len(shape1) + 1))
    else:
        dim = _wrap_dim(dim, nd)
        srt = sort(input if nd else input.reshape(1), dim).values
        r = dim
        drop_dims = (dim + 1,)
    if keepdim and nd:
        drop_dims = ()
    sd = srt._data
    n = sd.shape[r]
    keep = tuple(1 if i == r else k for i, k in enumerate(sd.shape))
    qcol = qa.reshape((-1,) + (1,) * len(keep))
    with quiet_fp(xp):
        if ignore_nan:
            count = (~xp.isnan(sd)).sum(axis=r, keepdims=True)
            ranks = qcol * (count - 1).astype(d.dtype)
            ranks = xp.where(count == 0, n - 1, ranks)  # a row of NaNs gives NaN
        else:
            last = xp.take(sd, [n - 1], axis=r)
            ranks = xp.where(xp.isnan(last), n - 1, qcol * (n - 1))  # any NaN gives NaN
        ranks = xp.broadcast_to(ranks, (qa.shape[0],) + keep).astype(d.dtype)
        if interpolation == "lower":
            ranks = xp.floor(ranks)
        elif interpolation == "higher":
            ranks = xp.ceil(ranks)
        elif interpolation == "nearest":
            ranks = xp.round(ranks)  # half to even, as torch's round
    lo = xp.floor(ranks).astype(_INT64)
    hi = xp.ceil(ranks).astype(_INT64)
    spread = srt.unsqueeze(0).expand((qa.shape[0],) + tuple(sd.shape))
    out = _gather_raw(spread, r + 1, lo)
    if interpolation == "linear":
        weight: Any = _const((ranks - lo).astype(d.dtype, copy=False))
    elif interpolation == "midpoint":
        weight = _const(xp.full(ranks.shape, 0.5, dtype=d.dtype))
    else:
        weight = None
    if interpolation == "linear" and not scalar_q and q.requires_grad:
        # the linear weight is q's function, as torch's: its gradient reaches q (0 where the
        # rank is forced onto a NaN)
        if ignore_nan:
            slope = xp.broadcast_to(xp.where(count == 0, 0, count - 1), ranks.shape)
        else:
            slope = xp.broadcast_to(xp.where(xp.isnan(last), 0, n - 1), ranks.shape)
        qt = q.reshape(qcol.shape)
        tied = qt * _const(slope.astype(d.dtype)) - _const((qcol * slope).astype(d.dtype))
        weight = weight + tied
    if weight is not None:
        above = _gather_raw(spread, r + 1, hi)
        out = lerp(out, above, weight)
    # the dims torch drops, squeezed in place (the result is no view, as torch's)
    drop = ((0,) if scalar_q else ()) + drop_dims
    return out.squeeze_(drop) if drop else out


@op(method="quantile", function="quantile", autocast=dict(cpu="fp32"),
    grad_fn=("SqueezeBackward5", "LerpBackward1", "GatherBackward0"))
def quantile(input: Tensor, q: Any, dim: Optional[int] = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The q-th quantiles of input, overall or along dim.

    Args:
        input (Tensor): the input tensor (float32 or float64).
        q (float or Tensor): the quantile(s) in [0, 1]; a 1-d tensor gives them all, stacked
            along a new first dim.
        dim (int, optional): the dim to reduce; the flattened input when None.
        keepdim (bool, optional): keep the reduced dim as size 1. Default: False.
        interpolation (str, optional): keyword-only; between two neighbours: "linear",
            "lower", "higher", "midpoint" or "nearest". Default: "linear".

    A NaN in a row makes its quantiles NaN (see nanquantile). The gradient flows to the one or
    two entries each quantile is taken from.

    Example::

        >>> x = rustgrad.tensor([[1., 4., 2., 8.], [3., 5., 0., 1.]])
        >>> x.quantile(0.5, dim=1)
        tensor([3., 2.])
        >>> x.quantile(rustgrad.tensor([0.25, 0.75]))
        tensor([1.0000, 4.2500])
    """
    return _quantile(input, q, dim, keepdim, interpolation, False)


@op(method="nanquantile", function="nanquantile", autocast=dict(cpu="fp32"),
    grad_fn=("SqueezeBackward5", "LerpBackward1", "GatherBackward0"), args_like=quantile)
def nanquantile(input: Tensor, q: Any, dim: Optional[int] = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """quantile ignoring NaN: the q-th quantiles of the non-NaN entries.

    A row of NaNs only gives NaN.

    Example::

        >>> rustgrad.tensor([1., float("nan"), 3., 2.]).nanquantile(0.5)
        tensor(2.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ---- cov, corrcoef ---------------------------------------------------------------------------
def _check_weights(w: Tensor, name: str, n_obs: int, integral: bool) -> None:
    wd = w._data
    if wd.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {wd.ndim} dimensions")
    if wd.size != n_obs:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {wd.size} != {n_obs}")
    if integral and wd.dtype.kind not in "iu":
        raise RuntimeError(f"cov(): expected {name} to have integral dtype but got {name} with "
                           f"{_name_of(wd)} dtype")
    if not integral and not _dtype.is_floating_np(wd.dtype):
        raise RuntimeError(f"cov(): expected {name} to have floating point dtype but got "
                           f"{name} with {_name_of(wd)} dtype")
    if wd.size and bool((wd < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


@op(method="cov", function="cov", grad_fn="SqueezeBackward0")
def cov(input: Tensor, *, correction: int = 1, fweights: Optional[Tensor] = None,
        aweights: Optional[Tensor] = None) -> Tensor:
    """The covariance matrix of the variables in input's rows, observed in its columns.

    Args:
        input (Tensor): a 1-d (one variable) or 2-d (variables x observations) tensor.
        correction (int, optional): keyword-only; the divisor is N - correction (1: the
            unbiased estimate, 0: the maximum-likelihood one). Default: 1.
        fweights (Tensor, optional): keyword-only; integer frequency weights, one per observation.
        aweights (Tensor, optional): keyword-only; float observation weights.

    Example::

        >>> rustgrad.cov(rustgrad.tensor([[1., 2., 3.], [2., 2., 5.]]))
        tensor([[1.0000, 1.5000],
                [1.5000, 3.0000]])
    """
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {nd} dimensions")
    x = _as_float(input)
    x = x if nd == 2 else x.reshape(1, -1)
    n_obs = x.shape[1]
    w: Any = None
    if fweights is not None:
        _check_weights(fweights, "fweights", n_obs, True)
        w = fweights
    if aweights is not None:
        _check_weights(aweights, "aweights", n_obs, False)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        w_sum: Any = n_obs
        norm: Any = n_obs - correction
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
    if bool(norm <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        norm = 0 if not isinstance(norm, Tensor) else norm * 0
    xm = x - avg.unsqueeze(1)
    c = mm(xm, (xm if w is None else xm * w).t())
    return (c / norm).squeeze()


@op(method="corrcoef", function="corrcoef", grad_fn=("ClampBackward1", "DivBackward0"))
def corrcoef(input: Tensor) -> Tensor:
    """The Pearson correlation coefficients of the variables in input's rows.

    Args:
        input (Tensor): a 1-d (one variable) or 2-d (variables x observations) tensor.

    Computed from cov; the values are clipped to [-1, 1].

    Example::

        >>> rustgrad.corrcoef(rustgrad.tensor([[1., 2., 3.], [2., 2., 5.]]))
        tensor([[1.0000, 0.8660],
                [0.8660, 1.0000]])
    """
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    std = diagonal(c).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    return c.clamp(-1, 1)


# ---- histc, histogram ------------------------------------------------------------------------
def _counts(xp: Any, d: Any, edges: Any, weight: Any, out_dtype: Any) -> Any:
    """How many entries of d (weighted) fall in each bin [e_i, e_i+1), the last bin closed."""
    flat = d.reshape(-1)
    nbins = edges.shape[0] - 1
    pos = xp.searchsorted(edges, flat, side="right") - 1
    pos = xp.where(flat == edges[-1], nbins - 1, pos)
    inside = (flat >= edges[0]) & (flat <= edges[-1])  # NaN is never inside
    keep = xp.nonzero(inside)[0]
    idx = pos[keep].astype(_INT64)
    w = None if weight is None else weight.reshape(-1)[keep].astype(_dtype.float64.np)
    counts = xp.bincount(idx, weights=w, minlength=nbins) if idx.size else \
        xp.zeros(nbins, dtype=_dtype.float64.np)
    return counts[:nbins].astype(out_dtype)


def _range_of(xp: Any, d: Any, lo: float, hi: float, widen: float, fname: str) -> Tuple[float, float]:
    if lo == hi and d.size:
        lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - widen, hi + widen
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"{fname}: range of [{lo:g}, {hi:g}] is not finite")
    return lo, hi


@op(method="histc", function="histc")
def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:  # noqa: A002
    """A histogram of input's entries in `bins` equal bins between min and max.

    Args:
        input (Tensor): the input tensor (floating point).
        bins (int, optional): the number of bins. Default: 100.
        min (float, optional): the lower end of the range. Default: 0.
        max (float, optional): the upper end of the range; when min == max, the data's smallest
            and largest entries are used. Default: 0.

    Entries outside [min, max] are not counted. The result has input's dtype and no gradient.

    Example::

        >>> rustgrad.tensor([1., 2., 1.]).histc(bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    d = input._data
    xp = input._backend
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"histogram_cpu" not implemented for \'{_name_of(d)}\'')
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if float(min) > float(max):
        raise RuntimeError("torch.histc: max must be larger than min")
    lo, hi = _range_of(xp, d, float(min), float(max), 1.0, "torch.histc")
    flat = d.reshape(-1)
    inside = (flat >= lo) & (flat <= hi)
    with quiet_fp(xp):
        # torch's linear bins: (x - min) * bins / (max - min), truncated; max goes to the last
        pos = xp.floor((flat.astype(_dtype.float64.np) - lo) * bins / (hi - lo))
    pos = xp.where(inside, xp.clip(pos, 0, bins - 1), 0).astype(_INT64)
    keep = xp.nonzero(inside)[0]
    counts = xp.bincount(pos[keep], minlength=bins) if keep.size else xp.zeros(bins, dtype=_INT64)
    return _const(counts[:bins].astype(d.dtype))


@op(method="histogram", function="histogram")
def histogram(input: Tensor, bins: Any = 100, *, range: Optional[Sequence[float]] = None,  # noqa: A002
              weight: Optional[Tensor] = None, density: bool = False) -> Any:
    """A histogram of input's entries and its bin edges.

    Args:
        input (Tensor): the input tensor (floating point).
        bins (int or Tensor): the number of equal bins, or a 1-d tensor of increasing edges.
        range (tuple of float, optional): keyword-only; (lowest, highest) edges of equal bins;
            the data's smallest and largest entries by default.
        weight (Tensor, optional): keyword-only; a weight per entry, summed instead of counts.
        density (bool, optional): keyword-only; normalize so that the histogram integrates to 1.

    Returns a named tuple (hist, bin_edges); each bin includes its left edge, the last one
    its right edge too. Nothing is differentiable.

    Example::

        >>> rustgrad.histogram(rustgrad.tensor([1., 2., 1.]), bins=4, range=(0., 3.))
        torch.return_types.histogram(
        hist=tensor([0., 2., 1., 0.]),
        bin_edges=tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000]))
    """
    d = input._data
    xp = input._backend
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_name_of(d)}\'')
    if weight is not None and tuple(weight._data.shape) != tuple(d.shape):
        raise RuntimeError("torch.histogram(): if weight tensor is provided it should have the "
                           "same shape as the input tensor")
    if isinstance(bins, Tensor):
        edges = bins._data
        if edges.ndim != 1:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension, but got "
                               f"{edges.ndim} dimensions in the bins tensor")
        if edges.dtype != d.dtype:
            raise RuntimeError("torch.histogram: input tensor and bins tensors should have the "
                               f"same dtype, but got input {_name_of(d)} and bins {_name_of(edges)}")
        if edges.shape[0] < 1:
            raise RuntimeError("torch.histogram(): bins tensor should have at least 1 element, but "
                               "got 0 elements")
        edges = edges.copy()
    else:
        edges = _equal_edges(xp, d.reshape(-1), bins, range, 0, d.dtype)
    wd = None if weight is None else weight._data
    hist = _counts(xp, d, edges, wd, d.dtype)
    if density:
        with quiet_fp(xp):
            hist = (hist / (hist.sum() * (edges[1:] - edges[:-1]))).astype(d.dtype)
    return return_types.histogram(_const(hist), _const(edges))


def _equal_edges(xp: Any, col: Any, bins: Any, range: Optional[Sequence[float]], dim: int,  # noqa: A002
                 dtype: Any) -> Any:
    """bins + 1 equal edges over `range` (lowest, highest), or over col's smallest and largest
    entries (dim: the histogram's dimension, for torch's messages)."""
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension {dim}")
    lo, hi = (0.0, 0.0) if range is None else (float(range[0]), float(range[1]))
    if range is not None and lo > hi:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} "
                           f"max {hi:g} for dimension {dim}")
    if range is None:
        lo, hi = (float(col.min()), float(col.max())) if col.size else (0.0, 1.0)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{lo:g}, {hi:g}] is not "
                           "finite")
    if lo == hi:  # as NumPy: a bin of width 1 around the single value
        lo, hi = lo - 0.5, hi + 0.5
    return xp.asarray(_creation.linspace(lo, hi, bins + 1, dtype=_dtype.from_np(dtype))._data)


@op(function="histogramdd")
def histogramdd(input: Tensor, bins: Any = 10, *, range: Optional[Sequence[float]] = None,  # noqa: A002
                weight: Optional[Tensor] = None, density: bool = False) -> Any:
    """A D-dimensional histogram of the points in input's rows and its bin edges per dim.

    Args:
        input (Tensor): points (..., D), floating point; the last dim holds their coordinates.
        bins (int, sequence of ints or sequence of Tensors): the number of equal bins in every
            dim, per dim, or each dim's increasing edges. Default: 10.
        range (sequence of float, optional): keyword-only; (lowest, highest) of each dim in
            turn, 2D numbers; the data's smallest and largest coordinates by default.
        weight (Tensor, optional): keyword-only; a weight per point (input's shape without its
            last dim), summed instead of counts.
        density (bool, optional): keyword-only; normalize so that the histogram integrates to 1.

    Returns a named tuple (hist, bin_edges), bin_edges a tuple of D tensors; each bin includes
    its left edges, the last ones their right edges too. Nothing is differentiable.

    Example::

        >>> pts = rustgrad.tensor([[0., 1.], [1., 0.], [2., 0.], [2., 2.]])
        >>> rustgrad.histogramdd(pts, bins=[2, 2]).hist
        tensor([[0., 1.],
                [2., 1.]])
    """
    d = input._data
    xp = input._backend
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"histogramdd" not implemented for \'{_name_of(d)}\'')
    if d.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    n_dims = d.shape[-1]
    pts = d.reshape(-1, n_dims)
    per_dim = [bins] * n_dims if isinstance(bins, int) else list(bins)
    if len(per_dim) != n_dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension "
                           "of the input.")
    if range is not None and len(range) != 2 * n_dims:
        raise RuntimeError(f"torch.histogramdd: for a {n_dims}-dimensional histogram range should "
                           f"have {2 * n_dims} elements, but got {len(range)}")
    if weight is not None and tuple(weight._data.shape) != tuple(d.shape[:-1]):
        raise RuntimeError(
            "torch.histogramdd: if weight tensor is provided it should have the same shape as the "
            "input tensor excluding its innermost dimension, but got input with shape "
            f"{list(d.shape)} and weight with shape {list(weight._data.shape)}")
    edges = []
    for k, b in enumerate(per_dim):
        if isinstance(b, Tensor):
            if b._data.dtype != d.dtype:
                raise RuntimeError(
                    "torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                    f"but got input with dtype {_dtype.cpp_name(_dtype.from_np(d.dtype))} and bins for "
                    f"dimension {k} with dtype {_dtype.cpp_name(_dtype.from_np(b._data.dtype))}")
            edges.append(b._data.copy())
        else:
            rng = None if range is None else range[2 * k:2 * k + 2]
            edges.append(_equal_edges(xp, pts[:, k], int(b), rng, k, d.dtype))
    nbins = tuple(e.shape[0] - 1 for e in edges)
    flat = xp.zeros(pts.shape[0], dtype=_INT64)
    inside = xp.ones(pts.shape[0], dtype=bool)
    for k, e in enumerate(edges):
        col = pts[:, k]
        pos = xp.searchsorted(e, col, side="right") - 1
        pos = xp.where(col == e[-1], nbins[k] - 1, pos)
        inside &= (col >= e[0]) & (col <= e[-1])  # NaN is never inside
        flat = flat * nbins[k] + xp.clip(pos, 0, max(nbins[k] - 1, 0))
    keep = xp.nonzero(inside)[0]
    total = math.prod(nbins)
    w = None if weight is None else weight._data.reshape(-1)[keep].astype(_dtype.float64.np)
    counts = xp.bincount(flat[keep], weights=w, minlength=total) if keep.size else \
        xp.zeros(total, dtype=_dtype.float64.np)
    hist = counts[:total].astype(d.dtype).reshape(nbins)
    if density:
        volume = 1.0
        for k, e in enumerate(edges):
            shape = tuple(-1 if i == k else 1 for i in builtins.range(n_dims))
            volume = volume * (e[1:] - e[:-1]).reshape(shape)
        with quiet_fp(xp):
            hist = (hist / (hist.sum() * volume)).astype(d.dtype)
    return return_types.histogramdd(_const(hist), tuple(_const(e) for e in edges))


# ---- trapezoid, cumulative_trapezoid ---------------------------------------------------------
def _spacing(x: Tensor, y: Tensor, dim: int, name: str) -> Tensor:
    """The widths between x's sample points, shaped to broadcast against y's pairs along dim."""
    nd = y._data.ndim
    if x._data.ndim == 1:
        if x._data.shape[0] != y._data.shape[dim]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        dx = x[1:] - x[:-1]
        return dx.reshape(tuple(-1 if i == dim else 1 for i in builtins.range(nd)))
    xd = _wrap_dim(dim, x._data.ndim)
    n = x._data.shape[xd]
    return narrow(x, xd, 1, builtins.max(n - 1, 0)) - narrow(x, xd, 0, builtins.max(n - 1, 0))


def _pairs(y: Tensor, dim: int) -> Tuple[Tensor, Tensor]:
    n = y._data.shape[dim]
    return narrow(y, dim, 0, n - 1), narrow(y, dim, 1, n - 1)


@op(function="trapezoid", grad_fn=("MulBackward1", "DivBackward0"))
def trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule's integral of y along dim.

    Args:
        y (Tensor): the values of the function.
        x (Tensor or number, optional): the sample points (a 1-d tensor along dim, or y's
            shape), or the constant spacing when a number.
        dx (float, optional): keyword-only; the constant spacing between samples. Default: 1.
        dim (int, optional): keyword-only; the dim to integrate along. Default: -1.

    Example::

        >>> rustgrad.trapezoid(rustgrad.tensor([1., 2., 3.]))
        tensor(4.)
        >>> rustgrad.trapezoid(rustgrad.tensor([1., 2., 3.]), rustgrad.tensor([0., 1., 3.]))
        tensor(6.5000)
    """
    nd = y._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions" if dim == -1
                         else f"Dimension specified as {dim} but tensor has no dimensions")
    dim = _wrap_dim(dim, nd)
    y = _as_float(y)
    if isinstance(x, Tensor):
        if y._data.shape[dim] == 0:
            return (y * 0).sum(dim)
        left, right = _pairs(y, dim)
        return (_spacing(x, y, dim, "trapezoid") * (left + right)).sum(dim) / 2.0
    step = (1 if dx is None else dx) if x is None else x
    if y._data.shape[dim] == 0:
        return y.sum(dim) * step
    ends = y.select(dim, 0) + y.select(dim, -1)
    return (y.sum(dim) - ends * 0.5) * step


@op(function="trapz")
def trapz(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along dim (another name of trapezoid).

    Args:
        y (Tensor): the values of the function.
        x (Tensor, optional): the sample points.
        dx (float, optional): keyword-only; the constant spacing between samples. Default: 1.
        dim (int, optional): keyword-only; the dim to integrate along. Default: -1.

    Example::

        >>> rustgrad.trapz(rustgrad.tensor([1., 2., 3.]), dx=0.5)
        tensor(2.)
    """
    return trapezoid(y, x, dx=dx, dim=dim)


@op(function="cumulative_trapezoid", grad_fn=("CumsumBackward0", "DivBackward0"))
def cumulative_trapezoid(y: Tensor, x: Any = None, *, dx: Any = None, dim: int = -1) -> Tensor:
    """The running trapezoidal-rule integral of y along dim (one entry fewer than y).

    Args:
        y (Tensor): the values of the function.
        x (Tensor or number, optional): the sample points, or the constant spacing.
        dx (float, optional): keyword-only; the constant spacing between samples. Default: 1.
        dim (int, optional): keyword-only; the dim to integrate along. Default: -1.

    Example::

        >>> rustgrad.cumulative_trapezoid(rustgrad.tensor([1., 2., 3.]))
        tensor([1.5000, 4.0000])
    """
    nd = y._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions" if dim == -1
                         else f"Dimension specified as {dim} but tensor has no dimensions")
    dim = _wrap_dim(dim, nd)
    y = _as_float(y)
    if y._data.shape[dim] == 0:
        return y.cumsum(dim)
    left, right = _pairs(y, dim)
    if isinstance(x, Tensor):
        return (_spacing(x, y, dim, "cumulative_trapezoid") * (left + right)).cumsum(dim) / 2.0
    step = (1 if dx is None else dx) if x is None else x
    return ((step / 2.0) * (left + right)).cumsum(dim)


# ---- gradient --------------------------------------------------------------------------------
def _along(v: Tensor, dim: int, nd: int) -> Tensor:
    """A 1-d tensor of coefficients shaped to broadcast along dim of an nd-dim tensor."""
    return v.reshape(tuple(-1 if i == dim else 1 for i in builtins.range(nd)))


def _gradient_dim(f: Tensor, dim: int, h: Any, edge_order: int) -> Tensor:
    nd = f._data.ndim
    n = f._data.shape[dim]

    def part(start: int, length: int) -> Tensor:
        return narrow(f, dim, start, length)

    if not isinstance(h, Tensor):
        inner = (part(2, n - 2) - part(0, n - 2)) / (2.0 * h)
        if edge_order == 1:
            first = (part(1, 1) - part(0, 1)) / h
            last = (part(n - 1, 1) - part(n - 2, 1)) / h
        else:
            first = (part(0, 1) * -1.5 + part(1, 1) * 2.0 - part(2, 1) * 0.5) / h
            last = (part(n - 3, 1) * 0.5 - part(n - 2, 1) * 2.0 + part(n - 1, 1) * 1.5) / h
        return cat([first, inner, last], dim)
    # sample points: the second-order differences of non-uniform grids (as NumPy's gradient)
    dxs = h[1:] - h[:-1]
    d1, d2 = dxs[:-1], dxs[1:]
    a = -d2 / (d1 * (d1 + d2))
    b = (d2 - d1) / (d1 * d2)
    c = d1 / (d2 * (d1 + d2))
    inner = _along(a, dim, nd) * part(0, n - 2) + _along(b, dim, nd) * part(1, n - 2) + \
        _along(c, dim, nd) * part(2, n - 2)
    if edge_order == 1:
        first = (part(1, 1) - part(0, 1)) / _along(dxs[:1], dim, nd)
        last = (part(n - 1, 1) - part(n - 2, 1)) / _along(dxs[-1:], dim, nd)
    else:
        e1, e2 = dxs[:1], dxs[1:2]
        first = _along(-(2.0 * e1 + e2) / (e1 * (e1 + e2)), dim, nd) * part(0, 1) + \
            _along((e1 + e2) / (e1 * e2), dim, nd) * part(1, 1) + \
            _along(-e1 / (e2 * (e1 + e2)), dim, nd) * part(2, 1)
        e1, e2 = dxs[-2:-1], dxs[-1:]
        last = _along(e2 / (e1 * (e1 + e2)), dim, nd) * part(n - 3, 1) + \
            _along(-(e2 + e1) / (e1 * e2), dim, nd) * part(n - 2, 1) + \
            _along((2.0 * e2 + e1) / (e2 * (e1 + e2)), dim, nd) * part(n - 1, 1)
    return cat([first, inner, last], dim)


@op(function="gradient", grad_fn="CatBackward0")
def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,
             edge_order: int = 1) -> Tuple[Tensor, ...]:
    """Estimates of input's partial derivatives by finite differences, one tensor per dim.

    Args:
        input (Tensor): samples of a function on a grid.
        spacing (number, list of numbers or list of Tensors, optional): keyword-only; the grid
            step (the same for every dim, or one per dim), or each dim's 1-d sample points.
            Default: 1.
        dim (int or list of ints, optional): keyword-only; the dims to differentiate along;
            all of them when None.
        edge_order (int, optional): keyword-only; 1 or 2, the order of the one-sided
            differences at the edges (the interior uses central differences). Default: 1.

    Example::

        >>> rustgrad.gradient(rustgrad.tensor([1., 4., 9., 16., 25.]))
        (tensor([3., 4., 6., 8., 9.]),)
        >>> rustgrad.gradient(rustgrad.tensor([[1., 2., 4.], [2., 5., 9.]]), dim=1)
        (tensor([[1.0000, 1.5000, 2.0000],
                [3.0000, 3.5000, 4.0000]]),)
    """
    nd = input._data.ndim
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims: List[int] = list(builtins.range(nd))
    elif isinstance(dim, int):
        dims = [_wrap_dim(dim, nd)]
    else:
        dims = [_wrap_dim(k, nd) for k in dim]
    if isinstance(spacing, (list, tuple)):
        steps = list(spacing)
        if len(steps) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                               f"it's spacing and dim arguments to have the same length, but "
                               f"got a spacing argument of length {len(steps)} and a dim "
                               f"argument of length {len(dims)}.")
    else:
        steps = [spacing] * len(dims)
    for k in dims:
        if input._data.shape[k] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = _as_float(input)
    outs = []
    for k, h in zip(dims, steps):
        if isinstance(h, Tensor):
            if h._data.ndim != 1 or h._data.shape[0] != input._data.shape[k]:
                raise RuntimeError("torch.gradient expected each tensor to be on the same device "
                                   "as the input and of the same length as the dim it spans")
            h = _as_float(h)
        outs.append(_gradient_dim(f, k, h, edge_order))
    return tuple(outs)
