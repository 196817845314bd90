"""In-place ops on views of tensors in a graph: torch's CopySlices, and views following their base.

An in-place op on a view writes into its base's memory, so the base's history must change too.
The view's place in the base is read off the arrays themselves (offset and strides into the
base's memory, as torch's as_strided), so no view op needs to remember how it was made:

    base.grad_fn  <- CopySlices(base, out)   (gradient outside the view's elements to the old
                                              base, inside them to `out`)
    view.grad_fn  <- AsStridedBackward0(base)

Any view of the base made before (a sibling, or the base's own earlier views) must see the new
history too. The version counter they share has moved since their grad_fn was set, and the
binding (`refresh_view` in rust/python/src/tensor.rs) then calls `regenerate_view`, which remakes
the grad_fn as AsStridedBackward0 over the base's current history, as torch does.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .. import _core, _dtype
from .._backends import namespace_of
from .._tensor import Tensor
from ._node import node
from ._util import (
    MODE_VIEWS,
    _type_name,
    check_inplace,
    check_inplace_cast,
    check_internal_overlap,
    check_no_partial_overlap,
    is_grad_enabled,
)

Strided = Tuple[Tuple[int, ...], Tuple[int, ...], int]  # shape, element strides, element offset
# (base, view): each placed in the base's memory, offsets in elements from the base's first
Geometry = Tuple[Strided, Strided]


def geometry_of(view: Any, base: Any) -> Optional[Geometry]:
    """Where the array `view` lies in the memory of the array `base`, or None when element
    strides cannot say it (a view with another item size, or outside the base's memory)."""
    item = base.itemsize
    if view.itemsize != item:
        return None
    xp = _backend_of(base)
    off = xp.data_ptr(view) - xp.data_ptr(base)
    if off % item or any(s % item for s in view.strides) or any(s % item for s in base.strides):
        return None
    b = (tuple(base.shape), tuple(s // item for s in base.strides), 0)
    v = (tuple(view.shape), tuple(s // item for s in view.strides), off // item)
    if not _is_empty(v):
        (b_lo, b_hi), (v_lo, v_hi) = _span(b), _span(v)
        if v_lo < b_lo or v_hi > b_hi:
            return None  # no longer in the base's memory (the base's `.data` was replaced)
    return b, v


def _span(t: Strided) -> Tuple[int, int]:
    """The lowest and highest element offsets a strided layout touches."""
    shape, strides, offset = t
    lo = hi = offset
    for n, s in zip(shape, strides):
        if n > 1:
            if s > 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
    return lo, hi


def _is_empty(t: Strided) -> bool:
    return any(n == 0 for n in t[0])


def _overlaps(t: Strided) -> bool:
    """Whether two elements of a layout share memory (an expanded view)."""
    span = 0
    for n, s in sorted(((n, abs(s)) for n, s in zip(t[0], t[1]) if n > 1), key=lambda p: p[1]):
        if s <= span:
            return True
        span += (n - 1) * s
    return False


class _Memory:
    """A zeroed flat buffer standing for the base's memory, with both layouts placed in it."""

    def __init__(self, geometry: Geometry, like: Any) -> None:
        self.geometry = geometry
        b_lo, b_hi = _span(geometry[0])
        v_lo, v_hi = _span(geometry[1])
        self.lo = min(b_lo, v_lo)
        self.xp = _backend_of(like)
        self.buf = self.xp.zeros(max(b_hi, v_hi) - self.lo + 1, dtype=like.dtype)

    def at(self, t: Strided) -> Any:
        shape, strides, offset = t
        if _is_empty(t):
            return self.xp.zeros(shape, dtype=self.buf.dtype)
        item = self.buf.itemsize
        return self.xp.as_strided(self.buf[offset - self.lo:], shape,
                                  tuple(s * item for s in strides))

    def base(self) -> Any:
        return self.at(self.geometry[0])

    def view(self) -> Any:
        return self.at(self.geometry[1])

    def add_to_view(self, g: Any) -> None:
        """Writes g into the view's elements, summing where they share memory."""
        v = self.geometry[1]
        if _is_empty(v):
            return
        if not _overlaps(v):
            self.view()[...] = g
            return
        shape, strides, offset = v
        xp = self.xp
        idx = xp.zeros(shape, dtype=xp.int64) + (offset - self.lo)
        for d, (n, s) in enumerate(zip(shape, strides)):
            idx = idx + (xp.arange(n) * s).reshape((n,) + (1,) * (len(shape) - d - 1))
        xp.add_at(self.buf, idx, g)


def _backend_of(array: Any) -> Any:
    return namespace_of(array)


def _gather(g: Any, geometry: Geometry) -> Any:
    """The view's elements of a base-shaped array."""
    m = _Memory(geometry, g)
    m.base()[...] = g
    return m.view().copy()


def _scatter(g: Any, geometry: Geometry) -> Any:
    """A base-shaped array of zeros with the view-shaped g added at the view's elements."""
    m = _Memory(geometry, g)
    m.add_to_view(g)
    return m.base().copy()


def _outside(g: Any, geometry: Geometry) -> Any:
    """A base-shaped array with the view's elements zeroed."""
    m = _Memory(geometry, g)
    m.base()[...] = g
    if not _is_empty(geometry[1]):
        m.view()[...] = 0
    return m.base().copy()


def _as_strided_bw(g: Tensor, saved: Any, geometry: Any) -> Any:
    return AS_STRIDED_SCATTER.record(_scatter(g._data, geometry), (g,), geometry)


AS_STRIDED = node("AsStridedBackward0", _as_strided_bw)


def _scatter_bw(g: Tensor, saved: Any, geometry: Any) -> Any:
    return as_strided(g, geometry)


AS_STRIDED_SCATTER = node("AsStridedScatterBackward0", _scatter_bw)


def as_strided(base: Tensor, geometry: Geometry) -> Tensor:
    """The view's elements of the base-shaped `base` (differentiable: AsStridedBackward0)."""
    return AS_STRIDED.record(_gather(base._data, geometry), (base,), geometry)


# views of another item size that can remake their history all the same (complex_views: the
# real and imaginary parts of a complex tensor); each returns None where it does not apply
OTHER_ITEM_SIZE: list = []


def regenerate_view(view: Tensor, base: Tensor) -> Optional[Tensor]:
    """A tensor whose grad_fn is the view's history remade over its base's current one
    (AsStridedBackward0); the binding moves that grad_fn onto the view. None when the view's
    place in the base cannot be expressed by strides."""
    geometry = geometry_of(view._data, base._data)
    if geometry is None:
        for remake in OTHER_ITEM_SIZE:
            out = remake(view, base)
            if out is not None:
                return out
        return None
    return AS_STRIDED.record(view._data, (base,), geometry)


# ---- CopySlices ----------------------------------------------------------------------------
# torch::autograd::CopySlices: an in-place write into part of a tensor. The gradient outside
# the written elements goes to the tensor's old value (input 0), the gradient at them to what
# was written (input 1, when it is a tensor). ctx is (outside, at, region): `outside(g,
# region)` and `at(g, region)` take those parts of g, differentiably; `at` is None when the
# node has no input 1. `commit` writes through a view, its region the view's geometry in the
# base; `a[idx] = value` (_ops/indexing.py) writes at an index.
def _copy_slices_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    outside, at, region = ctx
    if at is None:
        return outside(g, region)
    return outside(g, region), at(g, region)


COPY_SLICES = node("torch::autograd::CopySlices", _copy_slices_bw)


def _outside_view(g: Tensor, geometry: Geometry) -> Tensor:
    """g with the view's elements zeroed (differentiable: CopySlices, its own backward)."""
    return OUTSIDE_VIEW.record(_outside(g._data, geometry), (g,), geometry)


def _outside_view_bw(g: Tensor, saved: Any, geometry: Any) -> Any:
    return _outside_view(g, geometry)


OUTSIDE_VIEW = node("CopySlices", _outside_view_bw)


def commit(view: Tensor, out: Tensor) -> None:
    """Finishes an in-place op on `view` whose out-of-place result is `out` (already computed
    with autograd): writes it into the shared memory and rewrites the histories."""
    if view._creation_meta in MODE_VIEWS:
        raise view._view_mode_error("is being")
    base = view._base
    geometry = geometry_of(view._data, base._data)
    if geometry is None:
        raise RuntimeError(
            "rustgrad: in-place op on a view whose place in its base strides cannot express "
            "(another item size, or a base whose .data was replaced) is not supported; clone() "
            "it first"
        )
    # The base's old history is taken before the write; its new value is the same memory.
    new_base = COPY_SLICES.record(base._data, (base, out), (_outside_view, as_strided, geometry))
    view._data[...] = out._data
    _core.rebase_history(base, new_base)
    _core.adopt_saved_output(view, out)  # a node that saved its output saved this view
    # The shared version moved: reading the view's history remakes it over the base's new one
    # now, as torch's rebase_history (is_leaf reads it without making a Python node).
    view.is_leaf  # noqa: B018


# ---- ending an in-place op -----------------------------------------------------------------
def commit_inplace(t: Tensor, out: Tensor) -> None:
    """Ends an in-place op on `t` whose out-of-place result (with its history) is `out`: writes
    it into t's memory and gives t out's history; on a view, the base's history becomes
    CopySlices and the view's AsStridedBackward0, as torch's."""
    if t._base is not None:
        commit(t, out)
        return
    t._data[...] = out._data
    _core.rebase_history(t, out)


def write_inplace(self: Tensor, out: Tensor, needs_grad: bool) -> Tensor:
    """Ends an in-place op whose result `out` was computed out of place: refuses a dtype self
    cannot hold, then with autograd gives self out's history, else just writes the values."""
    if out._data.dtype != self._data.dtype:
        raise RuntimeError(
            f"result type {_type_name(_dtype.from_np(out._data.dtype))} can't be cast to the "
            f"desired output type {_type_name(self.dtype)}"
        )
    if is_grad_enabled() and needs_grad:
        commit_inplace(self, out)
    else:
        self._data[...] = out._data
        self._bump_version()
    return self


def inplace_from(self: Tensor, compute: Any, reads_self: bool, *others: Any,
                 cast: bool = False, overlap: bool = True) -> Tensor:
    """The one rule of the in-place ops: `self.op_(...)` runs the out-of-place op as
    `compute(src)` and writes its result into self, giving self the op's history when autograd
    records (on a view, the base's history becomes CopySlices).

    reads_self: the op's backward reads self as it was, so src is a copy of self that keeps
    self's history (torch's generated in-place kernels save self.clone() the same way); else src
    is self. others: the op's other operands (their grad flags, their overlap with self).
    cast: the op computes in the promoted dtype, and the result is refused when self cannot hold
    it, else rounded to self's dtype. overlap: torch refuses a self whose elements overlap or that
    partially overlaps an operand (masked_fill_ alone writes into expanded tensors)."""
    check_inplace(self)
    if overlap:
        check_internal_overlap(self)
        for o in others:
            check_no_partial_overlap(self, o)
    grad = is_grad_enabled() and (self.requires_grad or any(
        isinstance(o, Tensor) and o.requires_grad for o in others))
    src = _core.shallow_copy(self, self._data.copy()) if grad and reads_self else self
    out = compute(src)
    if tuple(out._data.shape) != tuple(self._data.shape):
        raise RuntimeError(
            f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
            f"{list(out._data.shape)}"
        )
    if cast and out._data.dtype != self._data.dtype:
        check_inplace_cast(self, _dtype.from_np(out._data.dtype))
        out = out.to(self.dtype)
    return write_inplace(self, out, grad)
