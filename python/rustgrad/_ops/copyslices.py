"""In-place ops on views of tensors in a graph: torch's CopySlices.

An in-place op on a view writes into its base's memory, so the base's history must change too.
The view's region of the base is read off the arrays themselves (offset and strides into the
base's buffer, as torch's as_strided), so no view op needs to remember how it was made:

    new_base = copy_slices(base, out)   # base with the view's region replaced by `out`
    base.grad_fn  <- new_base.grad_fn    (CopySlices: gradient outside the region to the old
                                          base, inside the region to `out`)
    view.grad_fn  <- as_strided(base).grad_fn
"""

from __future__ import annotations

from typing import Any, Tuple

from .. import _core
from .._tensor import Tensor
from ._util import record

Region = Tuple[Tuple[int, ...], Tuple[int, ...], int]  # shape, element strides, element offset


def region_of(view: Any, base: Any) -> Region:
    """Where `view` (an array) lies in the C-contiguous array `base`, in elements."""
    item = base.itemsize
    xp = _backend_of(base)
    off = xp.data_ptr(view) - xp.data_ptr(base)
    return tuple(view.shape), tuple(s // item for s in view.strides), off // item


def _region(array: Any, region: Region) -> Any:
    """The region of a C-contiguous array with the base's shape, as a writable view."""
    shape, strides, offset = region
    xp = _backend_of(array)
    flat = array.reshape(-1)
    item = array.itemsize
    return xp.as_strided(flat[offset:], shape, tuple(s * item for s in strides))


def _backend_of(array: Any) -> Any:
    from .._backends import namespace_of

    return namespace_of(array)


def _as_strided_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    base_shape, region = ctx
    xp = g._backend
    z = xp.zeros(base_shape, dtype=g._data.dtype)
    _region(z, region)[...] = g._data
    return record(z, (g,), "AsStridedScatterBackward0", _scatter_bw, None, region)


def _scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return as_strided(g, ctx)


def as_strided(base: Tensor, region: Region) -> Tensor:
    """The view of `base` at `region` (differentiable: AsStridedBackward0)."""
    d = base._data if base._data.flags.c_contiguous else base._data.copy()
    out = _region(d, region)
    view_of = base if d is base._data else None
    return record(out, (base,), "AsStridedBackward0", _as_strided_bw, None,
                  (base._data.shape, region), False, view_of)


def _copy_slices_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    region, has_out = ctx
    keep = g._data.copy()
    _region(keep, region)[...] = 0
    g_base = record(keep, (g,), "CopySlices", _copy_slices_bw_bw, None, region)
    return (g_base, as_strided(g, region)) if has_out else g_base


def _copy_slices_bw_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    keep = g._data.copy()
    _region(keep, ctx)[...] = 0
    return record(keep, (g,), "CopySlices", _copy_slices_bw_bw, None, ctx)


def commit(view: Tensor, out: Tensor) -> None:
    """Finishes an in-place op on `view` whose out-of-place result is `out` (already computed
    with autograd): writes it into the shared memory and rewrites the histories."""
    base = view._base
    bd = base._data
    if not bd.flags.c_contiguous:
        raise RuntimeError(
            "rustgrad: in-place op on a view of a non-contiguous base tensor that requires grad "
            "is not supported; clone() the base first"
        )
    region = region_of(view._data, bd)
    data = bd.copy()
    _region(data, region)[...] = out._data
    new_base = record(data, (base, out), "torch::autograd::CopySlices", _copy_slices_bw, None,
                      (region, True))
    view._data[...] = out._data
    _core.rebase_history(base, new_base)
    new_view = as_strided(base, region)
    _core.rebase_history(view, new_view, False)
