"""Indexing: basic indexing returns views sharing storage and version counter; integer-array
and boolean-mask indexing copy (gradients of repeated indices add up); index assignment."""

from __future__ import annotations

import re
from typing import Any, Sequence

from .. import _dtype
from .._backends import _NDARRAY, namespace_of
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    MODE_VIEWS,
    _type_name,
    capturing,
    check_array_overlap,
    check_array_partial_overlap,
    check_inplace,
    check_internal_overlap,
    check_no_overlap,
    checked_int,
    const,
    is_grad_enabled,
    overlaps,
    same_device,
    same_elements,
)
from .copies import COPY, FILL
from .copyslices import COPY_SLICES, commit_inplace, write_inplace
from .gather import INDEX_FILL, MASKED_FILL, _check_bounds, _gather_raw
from .views import SELECT, SLICE, UNSQUEEZE, _slice_bw


def _normalize(idx: Any, xp: Any, like: Any = None) -> tuple:
    """The index as a tuple of array-level indices; tensors become their arrays (on the
    device of `like`, the indexed array: a CPU index moves there, as torch's does)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for i in idx:
        if isinstance(i, Tensor):
            d = i._data
            if d.dtype.kind not in "biu":
                raise IndexError(
                    "tensors used as indices must be long, int, byte or bool tensors"
                )
            if d.ndim == 0 and d.dtype.kind != "b":  # torch: an int (a view), not an index array
                out.append(int(i._backend.to_numpy(d)))
                continue
            if like is not None and (type(d) is not _NDARRAY or type(like) is not _NDARRAY):
                d = _index_on(d, like)
            out.append(d)
        elif isinstance(i, list):
            out.append(_list_index(i, xp))
        else:
            if type(i) is slice and i.step is not None and i.step < 0:
                raise ValueError("step must be greater than zero")
            if isinstance(i, float):
                raise IndexError(
                    "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                    f"Variables are valid indices (got {type(i).__name__})"
                )
            out.append(i)
    if like is not None and type(like) is not _NDARRAY:
        _check_array_indices(out, like.shape)
    return tuple(out)


def _check_array_indices(idx: list, shape: tuple) -> None:
    """IndexError for an out-of-range integer-array index. NumPy raises one itself; CuPy wraps
    the index around (a silent wrong element), so device arrays are checked here."""
    consumed = sum(0 if i is None or i is Ellipsis else
                   i.ndim if getattr(i, "dtype", None) is not None and i.dtype.kind == "b" else 1
                   for i in idx)
    dim = 0
    for i in idx:
        if i is Ellipsis:
            dim += len(shape) - consumed
            continue
        if i is None:
            continue
        kind = i.dtype.kind if getattr(i, "dtype", None) is not None and hasattr(i, "ndim") else ""
        if kind == "b":
            dim += i.ndim
            continue
        if type(i) is int and dim < len(shape) and not -shape[dim] <= i < shape[dim]:
            raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {shape[dim]}")
        if kind in "iu" and kind and dim < len(shape) and i.size:
            n = shape[dim]
            bad = (i < -n) | (i >= n)
            if bool(bad.any()):
                flat = i.reshape(-1)
                first = int(flat[int(bad.reshape(-1).argmax())])
                raise IndexError(f"index {first} is out of bounds for dimension {dim} with size {n}")
        dim += 1


def _index_on(d: Any, like: Any) -> Any:
    """Index array d on the device of the indexed array `like`: a CPU index is copied there;
    one of another device is refused with torch's message."""
    if type(d) is _NDARRAY:
        backend = namespace_of(like)
        return backend.from_numpy(d, backend.device_of(like))
    try:
        same_device(like, d)
    except RuntimeError:
        raise RuntimeError(
            "indices should be either on cpu or on the same device as the indexed tensor "
            f"({namespace_of(like).device_of(like)})"
        ) from None
    return d


def _list_index(i: list, xp: Any) -> Any:
    """A list index as an index array of the indexed tensor's backend."""
    arr = xp.asarray([x.item() if isinstance(x, Tensor) else x for x in i])
    if arr.dtype.kind not in "biu" and arr.size:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return arr.astype(_dtype.int64.np) if arr.size == 0 else arr


def _is_basic(idx: tuple) -> bool:
    for i in idx:
        t = type(i)
        if t is int or t is slice or i is None or i is Ellipsis:
            continue
        if t is bool or hasattr(i, "shape") and getattr(i, "ndim", 1) != 0:
            return False
        if hasattr(i, "dtype") and i.dtype.kind == "b":
            return False
        if not hasattr(i, "__index__"):
            return False
    return True


# A basic index's node, named as torch's, takes the gradient back as a slice's (_ops/views.py):
# ctx is (input shape, index).
ALIAS = node("AliasBackward0", _slice_bw)


def _basic_node(idx: tuple, shape: tuple) -> Any:
    """torch's grad_fn: the last indexing step that did something."""
    spec = ALIAS
    dim = 0
    for i in idx:
        if i is None:
            spec = UNSQUEEZE
        elif i is Ellipsis:
            dim = len(shape) - sum(1 for j in idx if j is not None and j is not Ellipsis) + dim
            continue
        elif type(i) is slice:
            n = shape[dim] if dim < len(shape) else 0
            if i.indices(n) != (0, n, 1):
                spec = SLICE
            dim += 1
        else:
            spec = SELECT
            dim += 1
    return spec


_TOO_MANY = re.compile(r"too many indices for array: array is (\d+)-dimensional")
_MASK = re.compile(r"boolean index did not match indexed array along (?:axis|dimension) (\d+)")


def _rephrase(e: IndexError, shape: tuple, nidx: tuple = ()) -> IndexError:
    """NumPy's indexing errors in torch's words."""
    msg = str(e)
    m = _TOO_MANY.match(msg)
    if m:
        return IndexError(f"too many indices for tensor of dimension {m.group(1)}")
    m = _MASK.match(msg)
    if m:
        # torch names the mask's shape and the mismatching dim in both the mask and the tensor
        bad_dim = int(m.group(1))
        dim = 0
        for i in nidx:
            if i is None:
                continue
            if i is Ellipsis:
                dim = len(shape) - sum(
                    (getattr(j, "ndim", 1) if getattr(j, "dtype", None) is not None
                     and j.dtype.kind == "b" else 1)
                    for j in nidx if j is not None and j is not Ellipsis
                ) + dim
                continue
            nd = getattr(i, "ndim", 1) if getattr(i, "dtype", None) is not None \
                and i.dtype.kind == "b" else 1
            if nd and dim <= bad_dim < dim + nd:
                mshape = ", ".join(str(x) for x in i.shape)
                tshape = ", ".join(str(x) for x in shape)
                return IndexError(
                    f"The shape of the mask [{mshape}] at index {bad_dim - dim} does not match "
                    f"the shape of the indexed tensor [{tshape}] at index {bad_dim}"
                )
            dim += nd
    return IndexError(msg.replace(" axis ", " dimension "))


def _zero_dim_error(idx: Any, nidx: tuple) -> Any:
    """torch's refusal of an index into a 0-dim tensor, or None if it is allowed."""
    if type(idx) is slice:
        return IndexError("slice() cannot be applied to a 0-dim tensor.")
    for i in nidx:
        if i is None or i is Ellipsis or type(i) is bool:
            continue
        if getattr(i, "dtype", None) is not None and i.dtype.kind == "b":
            continue
        if not isinstance(idx, (tuple, Tensor, list)):
            return IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        return IndexError("too many indices for tensor of dimension 0")
    return None


# ctx: (input shape, index)
def _index_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx = ctx
    return index_into_zeros(g, shape, idx, True)


INDEX = node("IndexBackward0", _index_bw)


@op(dunder="__getitem__",
    grad_fn=("IndexBackward0", "SliceBackward0", "AliasBackward0", "SelectBackward0", "UnsqueezeBackward0"))
def getitem(a: Tensor, idx: Any) -> Tensor:
    """self[indices]: basic indexing gives views, advanced indexing copies."""
    d = a._data
    nidx = _normalize(idx, a._backend, a._data)
    basic = _is_basic(nidx)
    if d.ndim == 0:
        err = _zero_dim_error(idx, nidx)
        if err is not None:
            raise err
    try:
        out = d[nidx]
    except IndexError as e:
        raise _rephrase(e, d.shape, nidx) from None
    if basic:
        if not hasattr(out, "shape") or out.shape == () and not isinstance(out, type(d)):
            out = d[nidx + (Ellipsis,)] if Ellipsis not in nidx else a._backend.asarray(out)
        # torch's single-slice fast path always records a slice, even a full one
        spec = SLICE if type(idx) is slice else _basic_node(nidx, d.shape)
        return spec.record(out, (a,), (d.shape, nidx), a)
    return INDEX.record(out, (a,), (d.shape, nidx))


# IndexPutBackward0: self with values written at idx (added to it, when accumulating). self's
# gradient is g with the written entries zeroed (g itself when accumulating), values' the
# gradient at idx. ctx is (idx, accumulate, inputs): the node's inputs are self and values, or
# one of them where the other is no tensor (index_into_zeros writes into zeros; `a[idx] = 3`
# writes a number).
_SELF, _VALUES, _BOTH = "self", "values", "self, values"


def _index_put_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    idx, accumulate, inputs = ctx
    if inputs == _VALUES:
        return g[idx]
    gs = g if accumulate else _zero_at(g, idx)
    return gs if inputs == _SELF else (gs, g[idx])


INDEX_PUT = node("IndexPutBackward0", _index_put_bw)


def _zero_at(g: Tensor, idx: tuple) -> Tensor:
    """g with the entries at idx zeroed (differentiable: IndexPutBackward0)."""
    keep = g._data.copy()
    keep[idx] = 0
    return INDEX_PUT.record(keep, (g,), (idx, False, _SELF))


def _at(g: Tensor, idx: tuple) -> Tensor:
    return g[idx]


def index_into_zeros(g: Tensor, shape: tuple, idx: tuple, accumulate: bool) -> Tensor:
    """zeros(shape) with g written (accumulate: added) at idx; differentiable in g."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    if accumulate:
        xp.add_at(z, idx, g._data)
    else:
        z[idx] = g._data
    return INDEX_PUT.record(z, (g,), (idx, accumulate, _VALUES))


def _scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx = ctx
    return _gather_raw(g, dim, idx)


# scatter's node (gather.py's spec, over self and src) over src alone
SCATTER_SRC = node("ScatterBackward0", _scatter_bw, variant=True)


def scatter_into_zeros(g: Tensor, shape: tuple, dim: int, idx: Any) -> Tensor:
    """zeros(shape) with g put along `dim` at idx (take_along_dim's layout)."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    if not shape:
        z[...] = g._data.reshape(())
    else:
        xp.put_along_axis(z, idx, g._data, axis=dim)
    return SCATTER_SRC.record(z, (g,), (dim, idx))


def _fit(value: Tensor, out: Any, idx: tuple) -> Tensor:
    """value without the leading size-1 dims past the rank of out[idx], which an assignment
    drops (NumPy's, and torch's setitem): the gradient taken at idx then broadcasts to it."""
    vd = value._data
    if vd.ndim and vd.shape[0] == 1:
        extra = vd.ndim - out[idx].ndim
        if extra > 0:
            return value.reshape(vd.shape[extra:])
    return value


def _put(a: Tensor, idx: Any, value: Any, name: str) -> Tensor:
    """Out-of-place `a[idx] = value`, differentiable in a and value, recorded as node `name`
    (`_setitem_name`)."""
    nidx = _normalize(idx, a._backend, a._data)
    out = a._data.copy()
    vt = isinstance(value, Tensor)
    try:
        out[nidx] = value._data if vt else value
    except IndexError as e:
        raise _rephrase(e, out.shape, nidx) from None
    except ValueError as e:
        raise RuntimeError(f"shape mismatch: {e}") from None
    if vt:
        value = _fit(value, out, nidx)
    inputs = (a, value) if vt else (a,)
    if name == "IndexPutBackward0":
        return INDEX_PUT.record(out, inputs, (nidx, False, _BOTH if vt else _SELF))
    if name == "torch::autograd::CopySlices":
        return COPY_SLICES.record(out, inputs, (_zero_at, _at if vt else None, nidx))
    if name == "torch::autograd::CopyBackwards":  # the whole of a, from a tensor
        return COPY.record(out, inputs)
    if name == "FillBackward2":  # the whole of a, from a number
        return FILL.record(out, inputs)
    # a number at one mask or index array: masked_fill's or index_fill's node, at the mask of
    # the written entries
    mask = a._backend.zeros(out.shape, dtype=bool)
    mask[nidx] = True
    return (MASKED_FILL if name == "MaskedFillBackward0" else INDEX_FILL).record(out, inputs, mask)


def _setitem_name(nidx: tuple, shape: tuple, value_is_tensor: bool) -> str:
    """The node torch's `a[idx] = value` ends on: CopySlices when the basic part of the index
    makes a real view (then written in place); else, for an advanced index, index_fill_
    (IndexFillBackward0) or masked_fill_ (MaskedFillBackward0) when the value is a number and
    the index is one int or bool index, or index_put_ (IndexPutBackward0); else copy_
    (CopyBackwards) or fill_ of a number (FillBackward2) on `a` itself."""
    advanced = 0
    mask = False
    dim = 0
    n_dims = sum(
        (getattr(i, "ndim", 1) if getattr(i, "dtype", None) is not None and i.dtype.kind == "b"
         else 1)
        for i in nidx if i is not None and i is not Ellipsis and type(i) is not bool
    )
    for i in nidx:
        if i is None or type(i) is bool:
            return "torch::autograd::CopySlices"
        if i is Ellipsis:
            dim += len(shape) - n_dims
            continue
        if type(i) is slice:
            n = shape[dim] if dim < len(shape) else 0
            if i.indices(n) != (0, n, 1):
                return "torch::autograd::CopySlices"
            dim += 1
        elif getattr(i, "ndim", None) == 0 and i.dtype.kind != "b" or isinstance(i, int):
            return "torch::autograd::CopySlices"  # an integer: a select view
        else:
            advanced += 1
            is_mask = getattr(i, "dtype", None) is not None and i.dtype.kind == "b"
            mask = mask or is_mask
            dim += i.ndim if is_mask else 1
    if advanced == 1 and not value_is_tensor:
        return "MaskedFillBackward0" if mask else "IndexFillBackward0"
    if advanced:
        return "IndexPutBackward0"
    return "torch::autograd::CopyBackwards" if value_is_tensor else "FillBackward2"


@op(dunder="__setitem__",
    grad_fn=("torch::autograd::CopySlices", "torch::autograd::CopyBackwards", "FillBackward2", "IndexFillBackward0",
             "IndexPutBackward0", "MaskedFillBackward0"))
def setitem(a: Tensor, idx: Any, value: Any) -> None:
    """self[indices] = value, in place (CopySlices when self needs grad)."""
    if is_grad_enabled() and a.requires_grad and a.is_leaf and a._base is None:
        # torch indexes first: an int or a partial slice makes a view of the leaf
        if _setitem_name(_normalize(idx, a._backend, a._data), a._data.shape, False) == "torch::autograd::CopySlices":
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                "operation."
            )
    if (is_grad_enabled() and a._base is not None and a._creation_meta in MODE_VIEWS
            and _setitem_name(_normalize(idx, a._backend, a._data), a._data.shape, False)
            == "torch::autograd::CopySlices"):
        check_inplace(a[idx])  # torch indexes first: its error names the indexing view
    check_inplace(a)
    vt = isinstance(value, Tensor)
    # only a view with a broadcast dimension can give an overlapping slice; torch fills a
    # number into it, and refuses to copy a tensor through a basic-indexing view of it
    if vt and overlaps(a._data):
        nidx = _normalize(idx, a._backend, a._data)
        if _setitem_name(nidx, a._data.shape, True) != "IndexPutBackward0":
            check_array_overlap(a._data[nidx])
    if vt and (value._data is a._data or a._data.base is not None
               or value._data.base is not None):
        # a value that reads a's memory: torch's copy_ into the indexed view refuses a partial
        # overlap, its index_put_ any overlap
        nidx = _normalize(idx, a._backend, a._data)
        if _setitem_name(nidx, a._data.shape, True) == "IndexPutBackward0":
            check_no_overlap(a, value)
        else:
            dst = a._data[nidx]
            if not same_elements(dst, value._data, a._backend):
                check_array_partial_overlap(a._backend, dst, value._data)
    if not vt:
        value = checked_int(a._data.dtype, value)
    if is_grad_enabled() and (a.requires_grad or (vt and value.requires_grad)):
        out = _put(a, idx, value, _setitem_name(_normalize(idx, a._backend, a._data), a._data.shape, vt))
        commit_inplace(a, out)
        return
    nidx = _normalize(idx, a._backend, a._data)
    if vt and type(value._data) is not type(a._data):
        same_device(a._data, value._data)
    try:
        a._data[nidx] = value._data if vt else value
    except IndexError as e:
        raise _rephrase(e, a._data.shape, nidx) from None
    except ValueError as e:
        raise RuntimeError(f"shape mismatch: {e}") from None
    a._bump_version()


def _check_index_bounds(xp: Any, index: Any, size: int, dim: int) -> None:
    _check_bounds(xp, index, size, dim)


# ---- index_add / index_put ---------------------------------------------------------------
# ctx: (dim, index array, alpha, source's shape)
def _index_add_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx, alpha, src_shape = ctx
    gs = g.index_select(dim, const(idx)) if g._data.ndim else g.reshape(1)
    if alpha != 1:
        gs = gs * alpha
    return g, gs.reshape(src_shape)


INDEX_ADD = node("IndexAddBackward0", _index_add_bw)


@op(method="index_add", function="index_add", grad_fn="IndexAddBackward0")
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of input with alpha * source added at index along dim.

    Args:
        dim (int): the dim index runs along.
        index (Tensor): 1-D int64 positions, one per slice of source along dim; repeats allowed.
        source (Tensor): the slices added.
        alpha (Number, optional): keyword-only; source's multiplier. Default: 1.

    Slices sent to a repeated index all add up. The gradient of source is the incoming
    gradient gathered at index (so each repeat gets the full gradient of its target).

    Example::

        >>> x = rustgrad.zeros(3)
        >>> src = rustgrad.tensor([1., 2., 4.], requires_grad=True)
        >>> y = x.index_add(0, rustgrad.tensor([0, 0, 2]), src)
        >>> y
        tensor([3., 0., 4.], grad_fn=<IndexAddBackward0>)
        >>> (y * rustgrad.tensor([1., 10., 100.])).sum().backward()
        >>> src.grad
        tensor([  1.,   1., 100.])
    """
    d, s, idx = input._data, source._data, index._data
    same_device(d, idx)
    same_device(d, s)
    if idx.ndim > 1:
        raise IndexError("index_add_(): Index is supposed to be a vector")
    if idx.dtype not in (_dtype.int64.np, _dtype.int32.np):
        raise RuntimeError("index_add_(): Expected dtype int32/int64 for index")
    if s.dtype != d.dtype:
        raise RuntimeError(
            f"index_add_(): self ({_type_name(input.dtype)}) and source "
            f"({_type_name(source.dtype)}) must have the same scalar type"
        )
    xp = input._backend
    dim = _wrap_dim(dim, max(d.ndim, 1))
    idx = idx.reshape(-1)
    n = d.shape[dim] if d.ndim else 1
    _check_index_bounds(xp, idx, n, dim)
    out = d.reshape(d.shape or (1,)).copy()
    src = s.reshape(out.shape[:dim] + (idx.size,) + out.shape[dim + 1:])
    if idx.size:
        xp.add_at(out, (slice(None),) * dim + (idx,), src * alpha if alpha != 1 else src)
    return INDEX_ADD.record(out.reshape(d.shape), (input, source), (dim, idx, alpha, s.shape))


@op(method="index_add_")
def index_add_(self: Tensor, dim: int, index: Tensor, source: Tensor, *,
               alpha: Any = 1) -> Tensor:
    """In-place index_add."""
    check_inplace(self)
    check_internal_overlap(self)
    check_no_overlap(self, source)
    out = index_add(self, dim, index, source, alpha=alpha)
    return write_inplace(self, out, self.requires_grad or source.requires_grad)


@op(method="index_put", function="index_put", grad_fn="IndexPutBackward0", autocast=dict(cuda="promote"))
def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor,
              accumulate: bool = False) -> Tensor:
    """A copy of input with values written (or accumulated) at the index tensors.

    Args:
        indices (tuple of Tensors): one index tensor per leading dim, broadcast together.
        values (Tensor): the values written, broadcast to the indexed shape.
        accumulate (bool, optional): add to the entries instead of overwriting (repeated
            indices then all add up). Default: False.

    Example::

        >>> rustgrad.zeros(3).index_put((rustgrad.tensor([0, 0]),), rustgrad.tensor([1., 2.]), accumulate=True)
        tensor([3., 0., 0.])
    """
    d, v = input._data, values._data
    xp = input._backend
    idx = _normalize(tuple(indices), xp, d)
    same_device(d, v)
    if v.dtype != d.dtype:
        raise RuntimeError(
            f"Index put requires the source and destination dtypes match, got "
            f"{_type_name(input.dtype)} for the destination and {_type_name(values.dtype)} for "
            "the source."
        )
    out = d.copy()
    if accumulate:
        sel_shape = out[idx].shape
        xp.add_at(out, idx, xp.broadcast_to(v, sel_shape))
    else:
        out[idx] = v
        values = _fit(values, out, idx)
    return INDEX_PUT.record(out, (input, values), (idx, accumulate, _BOTH))


@op(method="index_put_")
def index_put_(self: Tensor, indices: Sequence[Tensor], values: Tensor,
               accumulate: bool = False) -> Tensor:
    """In-place index_put."""
    check_inplace(self)
    check_no_overlap(self, values)
    out = index_put(self, indices, values, accumulate)
    return write_inplace(self, out, self.requires_grad or values.requires_grad)


# ---- embedding -----------------------------------------------------------------------------
# ctx: (weight's shape, indices, each index's gradient scale or None)
def _embedding_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx, keep = ctx
    gi = g.reshape(idx.size, shape[1])
    if keep is not None:
        gi = gi * const(keep.reshape(-1, 1).astype(g._data.dtype))
    return index_into_zeros(gi, shape, (idx.reshape(-1),), True)


EMBEDDING = node("EmbeddingBackward0", _embedding_bw)


# nn.functional.embedding takes (input, weight, padding_idx=None, max_norm, ...): argument
# handling over this op, in nn/functional.py
@op(function="embedding", grad_fn="EmbeddingBackward0")
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """The rows of weight at indices; padding_idx >= 0 names a row that gets no gradient.

    Args:
        weight (Tensor): the embedding matrix (num_embeddings, embedding_dim).
        indices (Tensor): int64 row numbers, of any shape.
        padding_idx (int, optional): a row whose gradient stays 0. Default: -1 (none).
        scale_grad_by_freq (bool, optional): divide each row's gradient by how often it occurs
            in indices. Default: False.
        sparse (bool, optional): accepted for torch's signature. Default: False.

    Note the argument order of this op (weight first) is torch's aten order; use
    nn.functional.embedding(input, weight) for the functional form.

    Example::

        >>> w = rustgrad.tensor([[0., 0.], [1., 1.], [2., 2.]])
        >>> rustgrad.embedding(w, rustgrad.tensor([2, 1]))
        tensor([[2., 2.],
                [1., 1.]])
    """
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    idd = indices._data
    if idd.dtype.kind not in "iu":
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got torch.{_dtype.LEGACY_NAMES[indices.dtype.name]} instead "
            "(while checking arguments for embedding)"
        )
    same_device(idd, weight._data)
    n = weight._data.shape[0]
    # Unlike indexing, embedding takes no negative index (torch's index_select check; a host
    # read, skipped inside a CUDA graph capture, where an out-of-range index wraps around).
    if idd.size and not capturing(weight._backend) and (int(idd.min()) < 0 or
                                                        int(idd.max()) >= n):
        raise IndexError("index out of range in self")
    out = weight._data[idd]
    keep = None if padding_idx < 0 else (idd != padding_idx)
    if scale_grad_by_freq and idd.size:
        # each occurrence's gradient divided by how often its index occurs in the batch
        xp = weight._backend
        flat = idd.reshape(-1).astype(_dtype.int64.np)
        freq = xp.bincount(flat, minlength=n)[flat].reshape(idd.shape)
        keep = (1.0 / freq) if keep is None else keep / freq
    return EMBEDDING.record(out, (weight,), (weight._data.shape, idd, keep))


@op(function="embedding_renorm_")
def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """Scales the rows of input at indices down to norm max_norm where it is exceeded.

    input is an embedding weight; it is written in place, outside autograd."""
    xp = input._backend
    rows = xp.unique(indices._data.reshape(-1))
    w = input._data
    norms = (xp.abs(w[rows]) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] *= scale[:, None]
    input._bump_version()
    return input


# ---- select_scatter / slice_scatter / diagonal_scatter -----------------------------------------
# Each is a copy of input with src written into one view of it (a select, a slice, a diagonal):
# input's gradient is g with that view zeroed (the op itself, writing zeros), src's the view of g.
def _embed(input: Tensor, src: Tensor, region: Any) -> Any:
    """A copy of input's array with src (cast to its dtype) written through region(copy), a
    writable view of it."""
    d, s = input._data, src._data
    same_device(d, s)
    out = d.copy()
    view = region(out)
    if tuple(view.shape) != tuple(s.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(s.shape)}, slice size = {list(view.shape)}")
    view[...] = s
    return out


def _select_scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, index, src_shape = ctx[:3]
    return select_scatter(g, g.new_zeros(src_shape), dim, index), g.select(dim, index)


SELECT_SCATTER = node("SelectScatterBackward0", _select_scatter_bw,
                      getters={"dim": lambda s, c: c[0], "index": lambda s, c: c[3]})


@op(method="select_scatter", function="select_scatter", grad_fn="SelectScatterBackward0")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of input with src written into input.select(dim, index).

    Args:
        src (Tensor): the values written, of the selected slice's shape (cast to input's dtype).
        dim (int): the dim to select along.
        index (int): the position selected (negative counts from the end).

    Example::

        >>> rustgrad.zeros(2, 3).select_scatter(rustgrad.ones(3), 0, 1)
        tensor([[0., 0., 0.],
                [1., 1., 1.]])
    """
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    n = d.shape[dim]
    if not -n <= index < n:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(d.shape)} at "
            f"dimension {dim}")
    given, index = index, index % n
    where = (slice(None),) * dim + (index,)

    def region(a: Any) -> Any:
        return a[where + (Ellipsis,)]

    out = _embed(input, src, region)
    return SELECT_SCATTER.record(out, (input, src), (dim, index, src._data.shape, given))


def _slice_scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, start, end, step, src_shape = ctx[:5]
    zeros = g.new_zeros(src_shape)
    sl = (slice(None),) * dim + (slice(start, end, step),)
    return slice_scatter(g, zeros, dim, start, end, step), g[sl]


SLICE_SCATTER = node("SliceScatterBackward0", _slice_scatter_bw,
                     getters={"dim": lambda s, c: c[0], "start": lambda s, c: c[5][0],
                              "end": lambda s, c: c[5][1], "step": lambda s, c: c[3]})


@op(method="slice_scatter", function="slice_scatter", grad_fn="SliceScatterBackward0")
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None,
                  step: int = 1) -> Tensor:
    """A copy of input with src written into the slice start:end:step of dim.

    Args:
        src (Tensor): the values written, of the slice's shape (cast to input's dtype).
        dim (int, optional): the dim sliced. Default: 0.
        start (int, optional): the slice's first position. Default: the start.
        end (int, optional): the position the slice stops before. Default: the end.
        step (int, optional): the stride of the slice. Default: 1.

    Example::

        >>> rustgrad.zeros(2, 4).slice_scatter(rustgrad.ones(2, 2), 1, start=0, step=2)
        tensor([[1., 0., 1., 0.],
                [1., 0., 1., 0.]])
    """
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    sl = (slice(None),) * dim + (slice(start, end, step),)

    def region(a: Any) -> Any:
        return a[sl]

    out = _embed(input, src, region)
    return SLICE_SCATTER.record(out, (input, src),
                                (dim, start, end, step, src._data.shape, (start, end)))


def _diagonal_region(a: Any, offset: int, dim1: int, dim2: int) -> Any:
    """The diagonal of a (its positions last, as torch's diagonal), as a writable view."""
    backend = namespace_of(a)
    return backend.writable_view(backend.diagonal(a, offset, dim1, dim2))


def _diagonal_scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    offset, dim1, dim2, src_shape = ctx
    return (diagonal_scatter(g, g.new_zeros(src_shape), offset, dim1, dim2),
            g.diagonal(offset, dim1, dim2))


DIAGONAL_SCATTER = node("DiagonalScatterBackward0", _diagonal_scatter_bw,
                        getters={"offset": lambda s, c: c[0], "dim1": lambda s, c: c[1],
                                 "dim2": lambda s, c: c[2]})


@op(method="diagonal_scatter", function="diagonal_scatter", grad_fn="DiagonalScatterBackward0")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of input with src written into input.diagonal(offset, dim1, dim2).

    Args:
        input (Tensor): the input tensor, at least 2-D.
        src (Tensor): the values written, of the diagonal's shape (cast to input's dtype).
        offset (int, optional): 0 the main diagonal, > 0 above it, < 0 below it. Default: 0.
        dim1 (int, optional): the first dim of the diagonal's plane. Default: 0.
        dim2 (int, optional): the second dim of the diagonal's plane. Default: 1.

    Example::

        >>> rustgrad.zeros(2, 3).diagonal_scatter(rustgrad.tensor([1., 2.]), 1)
        tensor([[0., 1., 0.],
                [0., 0., 2.]])
    """
    d = input._data
    dim1, dim2 = _wrap_dim(dim1, d.ndim), _wrap_dim(dim2, d.ndim)
    if dim1 == dim2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")

    def region(a: Any) -> Any:
        return _diagonal_region(a, offset, dim1, dim2)

    out = _embed(input, src, region)
    return DIAGONAL_SCATTER.record(out, (input, src), (offset, dim1, dim2, src._data.shape))
