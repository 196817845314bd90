"""Index-driven ops: index_select, gather, scatter / scatter_add (and in place), masked_fill
(and in place), masked_select, take_along_dim, nonzero.

Every check (dtypes, shapes, index bounds) runs before anything is written, so an op that raises
leaves its inputs unchanged. Gradients of repeated indices add up."""

from __future__ import annotations

import warnings
from typing import Any, Tuple

from .. import _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    NOT_IMPLEMENTED,
    _type_name,
    as_scalar,
    check_inplace,
    check_internal_overlap,
    checked_int,
    is_grad_enabled,
    same_device,
    sum_to,
)
from ._util import (
    const as _const,
)
from .compare import where
from .copies import clone
from .copyslices import inplace_from

_INT64 = _dtype.int64.np
_INT32 = _dtype.int32.np




def _numel(shape: tuple) -> int:
    n = 1
    for k in shape:
        n *= k
    return n


def _index_tensor(idx: Any) -> Tensor:
    return idx if isinstance(idx, Tensor) else _const(idx)


def _along(xp: Any, index: Any, dim: int) -> Tuple[Any, ...]:
    """The advanced-indexing tuple that reads `x[i0, ..., index[i], ..., in]` for every
    position i of `index` (take_along_dim's layout, index no larger than x)."""
    nd = index.ndim
    out = []
    for k in range(nd):
        if k == dim:
            out.append(index)
        else:
            shape = [1] * nd
            shape[k] = index.shape[k]
            out.append(xp.arange(index.shape[k]).reshape(shape))
    return tuple(out)


def _add_at(xp: Any, target: Any, where: Any, values: Any) -> None:
    if hasattr(xp, "add_at"):
        xp.add_at(target, where, values)
    else:
        xp.add.at(target, where, values)


def _check_bounds(xp: Any, index: Any, size: int, dim: int) -> None:
    if index.size == 0:
        return
    bad = (index < 0) | (index >= size)
    if bool(bad.any()):
        first = int(index.reshape(-1)[int(xp.argmax(bad.reshape(-1)))])
        raise RuntimeError(f"index {first} is out of bounds for dimension {dim} with size {size}")


# ---- differentiable building blocks for the backward formulas -------------------------
def _scatter_add_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # scatter_add: (input, src); scatter_add_into_zeros (src_shape None): (src,) alone
    dim, idx, src_shape = ctx
    gs = _gather_raw(g, dim, idx)
    if src_shape is None:
        return gs
    return g, _pad_to(gs, src_shape)


SCATTER_ADD = node("ScatterAddBackward0", _scatter_add_bw)


def scatter_add_into_zeros(g: Tensor, shape: tuple, dim: int, idx: Any) -> Tensor:
    """zeros(shape).scatter_add(dim, idx, g) for an index array idx (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    if not shape:
        z[...] = g._data.reshape(())
    elif idx.size:
        _add_at(xp, z, _along(xp, idx, dim), g._data.reshape(idx.shape))
    return SCATTER_ADD.record(z, (g,), (dim, idx, None))


def _gather_raw_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return scatter_add_into_zeros(g, shape, dim, idx)


GATHER = node("GatherBackward0", _gather_raw_bw)


def _gather_raw(x: Tensor, dim: int, idx: Any) -> Tensor:
    """x.gather(dim, idx) for a checked index array (differentiable in x)."""
    d = x._data
    if d.ndim == 0:
        return GATHER.record(d.copy(), (x,), (d.shape, 0, idx))
    out = d[_along(x._backend, idx, dim)]
    return GATHER.record(out, (x,), (d.shape, dim, idx))


def _index_add_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return _index_select_raw(g, dim, idx)


# torch's index_select backward is an index_add into zeros: index_add's node (indexing.py's spec)
# over the gradient alone
INDEX_ADD_ZEROS = node("IndexAddBackward0", _index_add_zeros_bw, variant=True)


def _index_add_zeros(g: Tensor, shape: tuple, dim: int, idx: Any) -> Tensor:
    """zeros(shape).index_add(dim, idx, g) (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape or (1,), dtype=g._data.dtype)
    gd = g._data.reshape(z.shape[:dim] + (idx.size,) + z.shape[dim + 1:])
    lead = (slice(None),) * dim
    if idx.size:
        _add_at(xp, z, lead + (idx,), gd)
    return INDEX_ADD_ZEROS.record(z.reshape(shape), (g,), (shape, dim, idx))


def _index_select_raw_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return _index_add_zeros(g, shape, dim, idx)


INDEX_SELECT = node("IndexSelectBackward0", _index_select_raw_bw)


def _index_select_raw(x: Tensor, dim: int, idx: Any) -> Tensor:
    d = x._data
    src = d.reshape(1) if d.ndim == 0 else d
    out = x._backend.take(src, idx, axis=dim)
    if d.ndim == 0:
        out = out.reshape(())
    return INDEX_SELECT.record(out, (x,), (d.shape, dim, idx))


# ---- index_select ----------------------------------------------------------------------
@op(method="index_select", function="index_select", grad_fn="IndexSelectBackward0")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of input at index along dim.

    Args:
        dim (int): the dim to index.
        index (Tensor): a 1-D int64 (or int32) tensor of positions; repeats allowed.

    The gradient of a repeated index is accumulated.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4], [5, 6]]).index_select(0, rustgrad.tensor([2, 0, 2]))
        tensor([[5, 6],
                [1, 2],
                [5, 6]])
    """
    d = input._data
    idx = index._data
    same_device(d, idx)
    if idx.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if idx.dtype not in (_INT64, _dtype.int32.np):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    dim = _wrap_dim(dim, d.ndim)
    idx = idx.reshape(-1)
    size = d.shape[dim] if d.ndim else 1
    if idx.size:
        bad = (idx < 0) | (idx >= size)
        if bool(bad.any()):
            if dim == 0 or d.ndim <= 1:
                raise IndexError("index out of range in self")
            first = int(idx[int(input._backend.argmax(bad))])
            raise RuntimeError(
                f"INDICES element is out of DATA bounds, id={first} axis_dim={size}"
            )
    return _index_select_raw(input, dim, idx.astype(_INT64, copy=False))


# ---- gather ----------------------------------------------------------------------------
def _check_gather_index(name: str, d: Any, idx: Any, dim: int, src: Any = None) -> None:
    if idx.dtype not in (_INT64, _INT32):  # torch takes int32 indices too
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if idx.ndim != d.ndim and not (idx.ndim <= 1 and d.ndim <= 1):
        raise RuntimeError(
            "Index tensor must have the same number of dimensions as "
            + ("input tensor" if src is None else "self tensor")
        )
    ishape, sshape = idx.shape, d.shape
    for k in range(min(len(ishape), len(sshape))):
        if k == dim:
            continue
        too_big = ishape[k] > sshape[k]
        too_big_src = src is not None and src.ndim and ishape[k] > src.shape[k]
        if too_big or too_big_src:
            if src is None:
                raise RuntimeError(
                    f"Size does not match at dimension {k} expected index {list(ishape)} to be "
                    f"no larger than self {list(sshape)} apart from dimension {dim}"
                )
            raise RuntimeError(
                f"Expected index {list(ishape)} to be no larger than self {list(sshape)} apart "
                f"from dimension {dim} and to be no larger size than src {list(src.shape)}"
            )
    if src is not None and src.ndim and ishape and ishape[dim] > src.shape[dim]:
        raise RuntimeError(
            f"Expected index {list(ishape)} to be no larger than self {list(sshape)} apart "
            f"from dimension {dim} and to be no larger size than src {list(src.shape)}"
        )


@op(method="gather", function="gather", grad_fn="GatherBackward0")
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """Values of input picked along dim by index (`out[i][j] = input[index[i][j]][j]` for dim 0).

    Args:
        input (Tensor): the source tensor.
        dim (int): the dim to pick along.
        index (Tensor): int64 positions, with input's number of dims; the result has its shape.
        sparse_grad (bool, optional): keyword-only; accepted for torch's signature (the gradient
            is dense). Default: False.

    The gradient is scattered back, added where index repeats.

    Example::

        >>> x = rustgrad.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        >>> x.gather(1, rustgrad.tensor([[0, 0], [1, 0]]))
        tensor([[1., 1.],
                [4., 3.]], grad_fn=<GatherBackward0>)
        >>> x.gather(1, rustgrad.tensor([[0, 0], [1, 0]])).sum().backward()
        >>> x.grad
        tensor([[2., 0.],
                [1., 1.]])
    """
    d = input._data
    idx = index._data
    same_device(d, idx)
    dim = _wrap_dim(dim, d.ndim)
    _check_gather_index("gather", d, idx, dim)
    if d.ndim == 0:
        _check_bounds(input._backend, idx, 1, dim)
        return _gather_raw(input, 0, idx.reshape(()))
    _check_bounds(input._backend, idx, d.shape[dim], dim)
    return _gather_raw(input, dim, idx)


@op(method="take_along_dim", function="take_along_dim")
def take_along_dim(input: Tensor, indices: Tensor, dim: Any = None) -> Tensor:
    """Values of input picked by indices along dim (the flattened input when dim is None).

    Args:
        input (Tensor): the source tensor.
        indices (Tensor): int64 positions, broadcast with input except along dim.
        dim (int, optional): the dim to pick along.

    Example::

        >>> x = rustgrad.tensor([[10, 30, 20]])
        >>> x.take_along_dim(x.argsort(dim=1), dim=1)
        tensor([[10, 20, 30]])
    """
    idx = indices._data
    same_device(input._data, idx)
    if idx.dtype != _INT64:
        raise RuntimeError(
            "torch.take_along_dim(): dtype of indices should be Long but got "
            f"{_type_name(_dtype.from_np(idx.dtype))}"
        )
    if dim is None:
        flat = input.reshape(-1)
        return gather(flat, 0, _const(idx.reshape(-1)))
    d = input._data
    if d.ndim != idx.ndim:
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {d.ndim} dimensions for input, and {idx.ndim} dimensions for "
            "indices"
        )
    dim = _wrap_dim(dim, d.ndim)
    xp = input._backend
    # broadcast everything but `dim`
    shape = []
    for k, (a, b) in enumerate(zip(d.shape, idx.shape)):
        if k == dim:
            shape.append(None)
            continue
        if a != b and a != 1 and b != 1:
            raise RuntimeError(
                f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                f"non-singleton dimension {k}"
            )
        shape.append(b if a == 1 else a)
    ishape = tuple(idx.shape[k] if s is None else s for k, s in enumerate(shape))
    xshape = tuple(d.shape[k] if s is None else s for k, s in enumerate(shape))
    if xshape != d.shape:
        input = input.expand(xshape)
    idx = xp.broadcast_to(idx, ishape)
    return gather(input, dim, _const(idx))


# ---- scatter / scatter_add -------------------------------------------------------------
def _scatter_src_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx, src_shape, has_src = ctx
    ga = scatter(g, dim, _const(idx), 0)
    if not has_src:
        return ga
    gs = _gather_raw(g, dim, idx)
    return ga, _pad_to(gs, src_shape)


def _pad_to(g: Tensor, shape: tuple) -> Tensor:
    """g (index-shaped) zero-padded at the end of each dim up to shape (a larger src)."""
    if tuple(g._data.shape) == tuple(shape):
        return g
    if int(g._data.size) == _numel(shape):  # a 0-d src read as (1,)
        return g.reshape(shape)
    out = g.new_zeros(tuple(shape))
    out[tuple(slice(0, n) for n in g._data.shape)] = g
    return out


SCATTER = node("ScatterBackward0", _scatter_src_bw)
SCATTER_VALUE = node("ScatterBackward1", _scatter_src_bw)


def _scatter_forward(name: str, input: Tensor, dim: int, index: Tensor, src: Any,
                     add: bool) -> Any:
    d = input._data
    idx = index._data
    same_device(d, idx)
    dim = _wrap_dim(dim, d.ndim)
    src_t = isinstance(src, Tensor)
    if src_t:
        same_device(d, src._data)
    if src_t and src._data.dtype != d.dtype:
        raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    _check_gather_index(name, d, idx, dim, src._data if src_t else None)
    xp = input._backend
    size = d.shape[dim] if d.ndim else 1
    _check_bounds(xp, idx, size, dim)
    out = d.copy()
    work = out.reshape(1) if d.ndim == 0 else out
    widx = idx.reshape(1) if idx.ndim == 0 else idx
    if widx.size:
        where = _along(xp, widx, dim)
        if src_t:
            sd = src._data.reshape(1) if src._data.ndim == 0 else src._data
            vals = sd[tuple(slice(0, n) for n in widx.shape)]
        else:
            vals = src
        if add:
            _add_at(xp, work, where, vals)
        else:
            work[where] = vals
    return out, dim, widx


_WARNED_REDUCE: list = []


def _scatter_with_reduce(input: Tensor, dim: int, index: Tensor, src: Any, reduce: str) -> Tensor:
    """scatter(reduce="add" / "multiply"): scatter_reduce's sum / prod with input's entries
    included. torch has no derivative for it: the node raises at backward, as torch's."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    src_t = isinstance(src, Tensor)
    value = src if src_t else as_scalar(src)
    if value is None:
        raise TypeError(f"scatter(): argument 'value' must be Number, not {type(src).__name__}")
    if src_t and not _WARNED_REDUCE:  # torch warns once per process
        _WARNED_REDUCE.append(True)
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and "
                      "will be removed in a future PyTorch release. Use torch.scatter_reduce "
                      "instead for more reduction options.", UserWarning, stacklevel=3)
    # the checks and the written positions of plain scatter, then the reduction in their place
    _, dim, widx = _scatter_forward("scatter", input, dim, index, value, False)
    xp = input._backend
    if src_t:
        s = src._data.reshape(1) if src._data.ndim == 0 else src._data
        vals = s[tuple(slice(0, n) for n in widx.shape)]
    else:
        vals = xp.full(widx.shape, value, dtype=input._data.dtype)
    out = _reduce_forward(xp, input._data, dim, widx, vals,
                          "sum" if reduce == "add" else "prod", True)
    return NOT_IMPLEMENTED.record(out, (input, src) if src_t else (input,), "scatter")


@op(method="scatter", function="scatter",
    grad_fn=("ScatterBackward0", "ScatterBackward1", "torch::autograd::NotImplemented"))
def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: Any = None) -> Tensor:
    """A copy of input with src (or value) written at index along dim, optionally reduced.

    Args:
        input (Tensor): the tensor written into (a copy of it).
        dim (int): the dim index runs along.
        index (Tensor): int64 positions: `src[i][j]` goes to `out[index[i][j]][j]` for dim 0.
        src (Tensor or Number): the values written.
        value (Number, optional): keyword-only; a number to write instead of src.
        reduce (str, optional): keyword-only; "add" or "multiply" to combine with the
            existing entries instead of overwriting (torch has no gradient for these).

    Where index repeats without reduce, which write wins is unspecified.

    Example::

        >>> rustgrad.zeros(2, 3).scatter(1, rustgrad.tensor([[2], [0]]), rustgrad.tensor([[1.], [2.]]))
        tensor([[0., 0., 1.],
                [2., 0., 0.]])
    """
    if src is None:
        src = value
    if reduce is not None:
        return _scatter_with_reduce(input, dim, index, src, reduce)
    if not isinstance(src, Tensor):
        s = as_scalar(src)
        if s is None:
            raise TypeError(f"scatter(): argument 'value' must be Number, not {type(src).__name__}")
        out, dim, widx = _scatter_forward("scatter", input, dim, index, s, False)
        return SCATTER_VALUE.record(out, (input,), (dim, widx, None, False))
    out, dim, widx = _scatter_forward("scatter", input, dim, index, src, False)
    return SCATTER.record(out, (input, src), (dim, widx, src._data.shape, True))


@op(method="scatter_add", function="scatter_add", grad_fn="ScatterAddBackward0", autocast=dict(cuda="promote"))
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of input with src added at index along dim (repeated indices accumulate).

    Args:
        input (Tensor): the tensor added into (a copy of it).
        dim (int): the dim index runs along.
        index (Tensor): int64 positions: `src[i][j]` is added to `out[index[i][j]][j]` for dim 0.
        src (Tensor): the values added.

    Example::

        >>> rustgrad.zeros(3).scatter_add(0, rustgrad.tensor([0, 0, 2]), rustgrad.tensor([1., 2., 5.]))
        tensor([3., 0., 5.])
    """
    out, dim, widx = _scatter_forward("scatter_add", input, dim, index, src, True)
    return SCATTER_ADD.record(out, (input, src), (dim, widx, src._data.shape))


def _inplace(self: Tensor, out_of_place: Any, others: Tuple[Any, ...], *args: Any,
             **kw: Any) -> Tensor:
    """In-place through the out-of-place op (copyslices.inplace_from); torch checks no
    overlap with the index or the source here, and lets masked_fill_ write into expanded
    tensors."""
    check_inplace(self)
    if out_of_place is not masked_fill:
        check_internal_overlap(self)
    return inplace_from(self, lambda src: out_of_place(src, *args, **kw), False, *others,
                        overlap=False)


@op(method="scatter_")
def scatter_(self: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
             reduce: Any = None) -> Tensor:
    """In-place scatter: writes src (or value) into self at index along dim."""
    return _inplace(self, scatter, (src,), dim, index, src, value=value, reduce=reduce)


@op(method="scatter_add_")
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In-place scatter_add: adds src into self at index along dim."""
    return _inplace(self, scatter_add, (src,), dim, index, src)


# ---- masked_fill, masked_select --------------------------------------------------------
def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {k}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


# torch's formulas: the gradient masked_fill'ed with 0 (so double backward records
# MaskedFillBackward0, as torch's)
def _masked_fill_bw(g: Tensor, saved: Any, mask: Any) -> Any:
    return masked_fill(g, _const(mask), 0.0)


def _masked_fill_value_bw(g: Tensor, saved: Any, mask: Any) -> Any:
    m = _const(mask)
    return masked_fill(g, m, 0.0), where(m, g, 0.0).sum()


MASKED_FILL = node("MaskedFillBackward0", _masked_fill_bw)
MASKED_FILL_VALUE = node("MaskedFillBackward1", _masked_fill_value_bw)


@op(method="masked_fill", function="masked_fill", grad_fn=("MaskedFillBackward0", "MaskedFillBackward1"))
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of input with value where mask is True.

    Args:
        mask (Tensor): a bool tensor broadcast with input.
        value (Number or 0-d Tensor): the value written.

    The filled entries get no gradient.

    Example::

        >>> x = rustgrad.tensor([1., 2., 3.])
        >>> x.masked_fill(x > 1, 0.)
        tensor([1., 0., 0.])
    """
    md = mask._data
    if md.dtype.kind != "b":
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype "
            + {"int64": "long int", "int32": "int", "uint8": "unsigned char", "float32": "float",
               "float64": "double"}.get(mask.dtype.name, mask.dtype.name)
        )
    same_device(input._data, md)
    vt = isinstance(value, Tensor)
    if vt and value._data.ndim != 0:
        raise RuntimeError(
            "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    d = input._data
    xp = input._backend
    shape = _broadcast_shape(md.shape, d.shape)
    v = value._data if vt else checked_int(d.dtype, as_scalar(value))
    if v is None:
        raise TypeError(f"masked_fill(): argument 'value' must be Number, not "
                        f"{type(value).__name__}")
    mask_b = xp.broadcast_to(md, shape)
    fill = xp.asarray(v).astype(d.dtype)
    if shape == d.shape:
        # a copy written where the mask holds (the mask broadcast by copyto): half the memory
        # traffic of a three-way where
        out = d.copy()
        xp.copyto(out, fill, where=md)
    else:
        out = xp.where(mask_b, fill, d)
    if vt:
        return MASKED_FILL_VALUE.record(out, (input, value), mask_b)
    return MASKED_FILL.record(out, (input,), mask_b)


@op(method="masked_fill_")
def masked_fill_(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """In-place masked_fill: writes value into self where mask is True."""
    return _inplace(self, masked_fill, (value,), mask, value)


# MaskedScatterBackward0: masked_scatter (inputs self and source; ctx (mask, source's shape))
# and, as masked_select's backward, a scatter into zeros (input g alone; ctx (mask, None))
def _masked_scatter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, source_shape = ctx[:2]
    m = _const(mask)
    picked = masked_select(g, m)
    if source_shape is None:
        return picked
    # source's entries past the mask's count get zeros
    picked = _pad_to(picked, (_numel(source_shape),))
    return where(m, 0.0, g), picked.reshape(source_shape)


MASKED_SCATTER = node("MaskedScatterBackward0", _masked_scatter_bw,
                      getters={"mask": lambda s, c: _const(c[-1]),
                               "source_sym_sizes": lambda s, c: c[1]})


def _masked_scatter_zeros(g: Tensor, mask: Any) -> Tensor:
    xp = g._backend
    z = xp.zeros(mask.shape, dtype=g._data.dtype)
    z[mask] = g._data
    return MASKED_SCATTER.record(z, (g,), (mask, None, mask))


def _masked_select_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # summed to the input's shape here: the output is 1-D, so an input broadcast against the
    # mask may have the output's shape (as many entries selected as it has), and the engine
    # (Note [Input metadata]) sums only inputs whose shape differs from the output's
    mask, shape = ctx
    return sum_to(_masked_scatter_zeros(g, mask), shape)


MASKED_SELECT = node("MaskedSelectBackward0", _masked_select_bw)


@op(method="masked_select", function="masked_select", grad_fn=("MaskedSelectBackward0", "MaskedScatterBackward0"))
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The entries of input where mask is True, as a 1-D tensor.

    Args:
        mask (Tensor): a bool tensor broadcast with input.

    Example::

        >>> x = rustgrad.tensor([[1, 2], [3, 4]])
        >>> x.masked_select(x % 2 == 0)
        tensor([2, 4])
    """
    md = mask._data
    if md.dtype.kind != "b":
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    d = input._data
    same_device(d, md)
    xp = input._backend
    shape = _broadcast_shape(md.shape, d.shape)
    mb = xp.broadcast_to(md, shape)
    out = xp.broadcast_to(d, shape)[mb]
    return MASKED_SELECT.record(out, (input,), (mb, d.shape))


# ---- nonzero ---------------------------------------------------------------------------
@op(method="nonzero", function="nonzero")
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the non-zero entries (one row each, or a tuple of index tensors).

    Args:
        as_tuple (bool, optional): keyword-only; give one 1-D index tensor per dim instead of
            an (n, ndim) tensor. Default: False.

    Example::

        >>> x = rustgrad.tensor([[0, 1], [2, 0]])
        >>> x.nonzero()
        tensor([[0, 1],
                [1, 0]])
        >>> x.nonzero(as_tuple=True)
        (tensor([0, 1]), tensor([1, 0]))
    """
    d = input._data
    xp = input._backend
    if as_tuple:  # torch: the columns of nonzero(), as views of it
        src = d.reshape(1) if d.ndim == 0 else d
        # the method (bound from views), as views imports this module
        return _const(xp.stack(xp.nonzero(src), axis=1).astype(_INT64)).unbind(1)
    if d.ndim == 0:
        return _const(xp.zeros((1 if bool(d) else 0, 0), dtype=_INT64))
    return _const(xp.stack(xp.nonzero(d), axis=1).astype(_INT64))


@op(method="argwhere", function="argwhere")
def argwhere(input: Tensor) -> Tensor:
    """The indices of the non-zero entries, one row each."""
    return nonzero(input)


# ---- index_fill ------------------------------------------------------------------------------
# index_fill is masked_fill at the mask of the indexed slices
INDEX_FILL = node("IndexFillBackward0", _masked_fill_bw)
INDEX_FILL_VALUE = node("IndexFillBackward1", _masked_fill_value_bw)


@op(method="index_fill", function="index_fill", grad_fn=("IndexFillBackward0", "IndexFillBackward1"))
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of input with value in the slices of dim that index names.

    Args:
        dim (int): the dim index runs along.
        index (Tensor): the int64 positions filled.
        value (Number or 0-d Tensor): the value written.

    Example::

        >>> rustgrad.zeros(2, 3).index_fill(1, rustgrad.tensor([0, 2]), 7.)
        tensor([[7., 0., 7.],
                [7., 0., 7.]])
    """
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dim, max(d.ndim, 1))
    idx = index._data
    if idx.dtype != _INT64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if idx.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    vt = isinstance(value, Tensor)
    if vt and value._data.ndim != 0:
        raise RuntimeError(
            "index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value._data.ndim} dimension(s)."
        )
    same_device(d, idx)
    size = d.shape[dim] if d.ndim else 1
    flat = idx.reshape(-1)
    bad = (flat < -size) | (flat >= size)
    if bool(bad.any()):
        first = int(flat[int(xp.argmax(bad))])
        raise IndexError(f"index {first} is out of bounds for dimension {dim} with size {size}")
    picked = xp.zeros(size, dtype=bool)
    picked[flat % size if size else flat] = True
    shape = [1] * d.ndim
    if d.ndim:
        shape[dim] = size
    mask = xp.broadcast_to(picked.reshape(shape), d.shape)
    v = value._data.astype(d.dtype) if vt else checked_int(d.dtype, as_scalar(value))
    out = xp.where(mask, xp.asarray(v).astype(d.dtype), d).astype(d.dtype, copy=False)
    if vt:
        return INDEX_FILL_VALUE.record(out, (input, value), mask)
    return INDEX_FILL.record(out, (input,), mask)


@op(method="index_fill_")
def index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """In-place index_fill: writes value into the slices of dim that index names."""
    return _inplace(self, index_fill, (value,), dim, index, value)


# ---- scatter_reduce / index_reduce -----------------------------------------------------------
# Both reduce src into a copy of self at positions along dim. index_reduce's 1-D index, expanded
# to source's shape along dim, is scatter_reduce's index: one forward and one formula serve both.
# sum and mean accumulate with the backend's add_at; prod, amax and amin with a segmented scan
# (_segment_reduce) that needs only sorting and indexing, so every backend runs it.
_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_ALIASES = {"max": "amax", "min": "amin"}


def _flat_targets(xp: Any, idx: Any, dim: int, shape: tuple) -> Any:
    """The flat (C-order) position in an array of `shape` that each entry of idx names along dim."""
    flat = xp.zeros(idx.shape, dtype=_INT64)
    step = 1
    for k in range(len(shape) - 1, -1, -1):
        if k == dim:
            flat = flat + idx.astype(_INT64, copy=False) * step
        else:
            pos = xp.arange(idx.shape[k], dtype=_INT64).reshape(
                [-1 if j == k else 1 for j in range(idx.ndim)])
            flat = flat + pos * step
        step *= shape[k]
    return flat.reshape(-1)


def _segment_reduce(xp: Any, ufunc: Any, targets: Any, values: Any) -> Tuple[Any, Any]:
    """(distinct targets, ufunc-reduction of the values sent to each): values sorted by target,
    then a log-depth prefix scan that combines only entries of one target."""
    order = xp.argsort(targets, kind="stable")
    ts = targets[order]
    vs = values[order]
    n = int(ts.size)
    step = 1
    while step < n:
        same = ts[step:] == ts[:-step]
        combined = xp.where(same, ufunc(vs[step:], vs[:-step]), vs[step:])
        vs[step:] = combined
        step *= 2
    last = xp.ones(n, dtype=bool)
    last[:-1] = ts[1:] != ts[:-1]
    return ts[last], vs[last]


def _reduce_forward(xp: Any, d: Any, dim: int, idx: Any, src: Any, reduce: str,
                    include_self: bool) -> Any:
    """A copy of d with src (index-shaped) reduced into it at idx along dim."""
    shape = d.shape or (1,)
    out = d.reshape(shape).copy().reshape(-1)
    if idx.size == 0:
        return out.reshape(d.shape)
    targets = _flat_targets(xp, idx.reshape(idx.shape or (1,)), dim, shape)
    vals = src.reshape(-1)
    if reduce in ("sum", "mean"):
        if not include_self:
            out[targets] = 0
        _add_at(xp, out, targets, vals)
        if reduce == "mean":
            # how many values each entry averages (bincount: no atomic add of int64 needed)
            count = xp.bincount(targets, minlength=out.size) + (1 if include_self else 0)
            count = xp.maximum(count, 1)
            if out.dtype.kind in "iu":
                out = xp.floor_divide(out, count).astype(out.dtype)
            else:
                out = (out / count).astype(out.dtype)
        return out.reshape(d.shape)
    ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
    where, v = _segment_reduce(xp, ufunc, targets, vals)
    out[where] = ufunc(out[where], v) if include_self else v
    return out.reshape(d.shape)


def _reduce_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # saved: (self, src or source, result); ctx: (dim, idx, reduce, include_self, src shape, ...)
    self_t, src, result = saved[0], saved[1], saved[2]
    dim, idx, reduce, include_self, src_shape = ctx[:5]
    if reduce in _ALIASES:  # the forward takes them; torch's backward does not
        raise RuntimeError("Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', "
                           f"'amin' but got {reduce}.")
    index = _const(idx)
    used = _src_used(src, idx)
    if reduce == "sum":
        gs, gsrc = g, _gather_raw(g, dim, idx)
    elif reduce == "mean":
        ones = g._backend.ones(idx.shape, dtype=g._data.dtype)
        n = g._backend.full(g._data.shape, 1 if include_self else 0, dtype=g._data.dtype)
        count = _const(_reduce_forward(g._backend, n, dim, idx, ones, "sum", True))
        gn = g / where(count == 0, 1.0, count)
        gs, gsrc = gn, _gather_raw(gn, dim, idx)
    elif reduce == "prod":
        masked_self = where(self_t == 0, 1.0, self_t)
        others = scatter_reduce(masked_self, dim, index, used, "prod", include_self=include_self)
        gs = g * others / masked_self
        src_zero = used == 0
        zeros_here = scatter_add(self_t.new_zeros(self_t.shape), dim, index,
                                 src_zero.to(self_t.dtype))
        single = src_zero & (_gather_raw(zeros_here, dim, idx) == 1)
        masked_src = where(single, 1.0, used)
        without = scatter_reduce(self_t, dim, index, masked_src, "prod", include_self=include_self)
        gsrc = where(single, _gather_raw(g * without, dim, idx),
                     _gather_raw(g * result, dim, idx) / where(src_zero, 1.0, used))
    else:  # amax, amin: the gradient is shared evenly between the entries equal to the result
        self_is = (self_t == result).to(g.dtype)
        src_is = (used == _gather_raw(result, dim, idx)).to(g.dtype)
        count = scatter_add(self_is, dim, index, src_is)
        share = g / count
        gs = self_is * share
        gsrc = src_is * _gather_raw(share, dim, idx)
    if not include_self:
        gs = scatter(gs, dim, index, 0)
    return gs, _pad_to(gsrc, src_shape)


def _src_used(src: Tensor, idx: Any) -> Tensor:
    """The part of src that idx sends somewhere (src's leading corner of idx's shape)."""
    if int(src._data.size) == int(idx.size):
        return src.reshape(idx.shape)
    return src[tuple(slice(0, n) for n in idx.shape)]


_REDUCE_GETTERS = {"dim": lambda s, c: c[0], "index": lambda s, c: c[5],
                   "reduce": lambda s, c: c[2], "include_self": lambda s, c: c[3]}


SCATTER_REDUCE = node("ScatterReduceBackward0", _reduce_bw, saved=("self", "src"), result=True,
                      getters=_REDUCE_GETTERS)
INDEX_REDUCE = node("IndexReduceBackward0", _reduce_bw, saved=("self", "source"), result=True,
                    getters=_REDUCE_GETTERS)


def _check_reduce_dtypes(input: Tensor, reduce: str) -> None:
    if reduce == "mean" and input._data.dtype.kind == "b":
        raise NotImplementedError(
            '"scatter_gather_tensor_cpu_reduce_mean" not implemented for \'Bool\'')


@op(method="scatter_reduce", function="scatter_reduce", grad_fn="ScatterReduceBackward0")
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True, _original: Any = None) -> Tensor:
    """A copy of input with src reduced into it at index along dim.

    Args:
        input (Tensor): the tensor reduced into (a copy of it).
        dim (int): the dim index runs along.
        index (Tensor): int64 positions: `src[i][j]` goes to `out[index[i][j]][j]` for dim 0.
        src (Tensor): the values reduced, of input's dtype.
        reduce (str): "sum", "prod", "mean", "amax" or "amin".
        include_self (bool, optional): keyword-only; whether input's own entries at the
            positions written take part in the reduction. Default: True.

    Entries index does not name keep input's value. amax/amin share the gradient evenly
    between ties; prod's gradient is exact where entries are zero.

    Example::

        >>> x = rustgrad.tensor([1., 2., 3.])
        >>> src = rustgrad.tensor([5., 4., 7., 1.])
        >>> x.scatter_reduce(0, rustgrad.tensor([0, 0, 2, 2]), src, "amax")
        tensor([5., 2., 7.])
        >>> x.scatter_reduce(0, rustgrad.tensor([0, 0, 2, 2]), src, "mean", include_self=False)
        tensor([4.5000, 2.0000, 4.0000])
    """
    if reduce not in _REDUCES and reduce not in ("max", "min"):  # torch takes max/min too
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d, idx = input._data, index._data
    same_device(d, idx)
    same_device(d, src._data)
    dim = _wrap_dim(dim, d.ndim)
    if src._data.dtype != d.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_gather_index("scatter", d, idx, dim, src._data)
    _check_bounds(input._backend, idx, d.shape[dim] if d.ndim else 1, dim)
    _check_reduce_dtypes(input, reduce)
    s = src._data
    s = s.reshape(1) if s.ndim == 0 else s
    widx = idx.reshape(1) if idx.ndim == 0 else idx
    used = s[tuple(slice(0, n) for n in widx.shape)]
    out = _reduce_forward(input._backend, d, dim, widx, used, _ALIASES.get(reduce, reduce),
                          include_self)
    return SCATTER_REDUCE.record(
        out, (input, src), (dim, widx, reduce, include_self, s.shape, index),
        self=input if _original is None else _original, src=src)


def _original(self: Tensor, other: Tensor) -> Any:
    """What an in-place reduction's node saves as self: a copy of self's values before the
    write (self itself is overwritten), or None when nothing needs a gradient."""
    if is_grad_enabled() and (self.requires_grad or other.requires_grad):
        return clone(self)
    return None


@op(method="scatter_reduce_")
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In-place scatter_reduce: reduces src into self at index along dim."""
    return _inplace(self, scatter_reduce, (src,), dim, index, src, reduce,
                    include_self=include_self, _original=_original(self, src))


def _index_reduce_args(name: str, input: Tensor, dim: int, index: Tensor, source: Tensor,
                       reduce: str) -> Tuple[int, Any]:
    """Checks index_reduce's arguments; gives the wrapped dim and index expanded to source."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(
            f"{name}(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    d, s, idx = input._data, source._data, index._data
    same_device(d, idx)
    same_device(d, s)
    dim = _wrap_dim(dim, max(d.ndim, 1))
    if idx.ndim > 1:
        raise IndexError(
            f"{name}_(): Index is supposed to be a vector, but got dim: {idx.ndim} with type: "
            f"{_dtype.scalar_type_name(index.dtype)} and size: {list(idx.shape)}")
    if idx.dtype not in (_INT64, _dtype.int32.np):
        raise RuntimeError(f"{name}_(): Expected dtype int32/int64 for index")
    if s.dtype != d.dtype:
        raise RuntimeError(
            f"{name}_(): self ({_dtype.scalar_type_name(input.dtype)}) and source "
            f"({_dtype.scalar_type_name(source.dtype)}) must have the same scalar type")
    dshape, sshape = d.shape or (1,), s.shape or (1,)
    if len(dshape) != len(sshape) or any(a != b for k, (a, b) in enumerate(zip(dshape, sshape))
                                         if k != dim):
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            f"dimension. Got self.shape = {list(d.shape)} source.shape = {list(s.shape)}")
    flat = idx.reshape(-1)
    if flat.size != sshape[dim]:
        raise RuntimeError(
            f"{name}_(): Number of indices ({flat.size}) should be equal to source.size(dim): "
            f"({sshape[dim]}), for dim: {dim}")
    n = dshape[dim]
    if flat.size and bool(((flat < 0) | (flat >= n)).any()):
        raise IndexError("index out of range in self")
    flat = flat.astype(_INT64, copy=False)
    shape = [1] * len(sshape)
    shape[dim] = flat.size
    return dim, input._backend.broadcast_to(flat.reshape(shape), sshape)


@op(method="index_reduce", function="index_reduce", grad_fn="IndexReduceBackward0")
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True, _original: Any = None) -> Tensor:
    """A copy of input with the slices of source reduced into the slices index names along dim.

    Args:
        input (Tensor): the tensor reduced into (a copy of it).
        dim (int): the dim index runs along.
        index (Tensor): 1-D int64 (or int32) positions, one per slice of source along dim.
        source (Tensor): the slices reduced, of input's dtype.
        reduce (str): "prod", "mean", "amax" or "amin".
        include_self (bool, optional): keyword-only; whether input's own slices take part.
            Default: True.

    Example::

        >>> x = rustgrad.ones(2, 2)
        >>> src = rustgrad.tensor([[2., 3.], [4., 5.]])
        >>> x.index_reduce(0, rustgrad.tensor([1, 1]), src, "prod")
        tensor([[ 1.,  1.],
                [ 8., 15.]])
    """
    dim, idx = _index_reduce_args("index_reduce", input, dim, index, source, reduce)
    d = input._data
    s = source._data.reshape(idx.shape)
    out = _reduce_forward(input._backend, d, dim, idx, s, reduce, include_self)
    return INDEX_REDUCE.record(
        out, (input, source), (dim, idx, reduce, include_self, source._data.shape, index),
        self=input if _original is None else _original, source=source)


@op(method="index_reduce_")
def index_reduce_(self: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                  include_self: bool = True) -> Tensor:
    """In-place index_reduce: reduces the slices of source into self's slices at index."""
    return _inplace(self, index_reduce, (source,), dim, index, source, reduce,
                    include_self=include_self, _original=_original(self, source))


@op(method="masked_scatter", function="masked_scatter", grad_fn="MaskedScatterBackward0")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of input with source's entries, in order, written where mask is True.

    Args:
        mask (Tensor): a bool tensor broadcast with input.
        source (Tensor): at least as many entries as mask has True ones, read in row-major order.

    Example::

        >>> x = rustgrad.zeros(2, 3)
        >>> x.masked_scatter(rustgrad.tensor([True, False, True]), rustgrad.tensor([1., 2., 3., 4.]))
        tensor([[1., 0., 2.],
                [3., 0., 4.]])
    """
    d, md, s = input._data, mask._data, source._data
    if md.dtype.kind != "b":
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype "
            f"{_dtype.scalar_type_name(mask.dtype)}")
    if s.dtype != d.dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got"
            f"{_dtype.scalar_type_name(input.dtype)} and {_dtype.scalar_type_name(source.dtype)}")
    same_device(d, md)
    same_device(d, s)
    xp = input._backend
    shape = _broadcast_shape(md.shape, d.shape)
    mb = xp.broadcast_to(md, shape)
    count = int(mb.sum())
    if count > s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = xp.broadcast_to(d, shape).copy()
    out[mb] = s.reshape(-1)[:count]
    return MASKED_SCATTER.record(out, (input, source), (mb, s.shape, md))


@op(method="masked_scatter_")
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """In-place masked_scatter: writes source's entries, in order, where mask is True."""
    return _inplace(self, masked_scatter, (source,), mask, source)


# ---- index_copy --------------------------------------------------------------------------------
def _index_copy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx, source_shape = ctx[:3]
    index = _const(idx)
    gs = g.index_fill(dim, index, 0)
    return gs, g.index_select(dim, index).reshape(source_shape)


INDEX_COPY = node("IndexCopyBackward0", _index_copy_bw, saved=("source",),
                  getters={"dim": lambda s, c: c[0], "index": lambda s, c: c[3],
                           "source_dim": lambda s, c: len(c[2])})


def _check_index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tuple[int, Any]:
    d, s, idx = input._data, source._data, index._data
    same_device(d, idx)
    same_device(d, s)
    if idx.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {idx.ndim})")
    if idx.dtype != _INT64:
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got "
                           f"{_dtype.scalar_type_name(index.dtype)}")
    if s.dtype != d.dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) "
            f"{_dtype.scalar_type_name(input.dtype)} and (source) "
            f"{_dtype.scalar_type_name(source.dtype)}")
    dim = _wrap_dim(dim, max(d.ndim, 1))
    flat = idx.reshape(-1)
    if d.ndim and s.ndim and d.ndim != s.ndim:
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality "
            f"must match. Source dimensionality ({s.ndim}), destination dimensionality "
            f"({d.ndim})")
    if d.ndim and s.ndim:
        rest_d = [n for k, n in enumerate(d.shape) if k != dim]
        rest_s = [n for k, n in enumerate(s.shape) if k != dim]
        if rest_d != rest_s:
            raise RuntimeError(
                "index_copy_(): Source/destination tensor must have same slice shapes. "
                f"Destination slice shape: {' '.join(map(str, rest_d))} at dimension {dim} and "
                f"source slice shape: {' '.join(map(str, rest_s))} at dimension 0.")
    ssize = s.shape[dim] if s.ndim else 1
    if flat.size != ssize:
        raise IndexError(
            f"index_copy_(): Number of indices ({flat.size}) should be equal to "
            f"source.size(dim) ({ssize})")
    n = d.shape[dim] if d.ndim else 1
    if flat.size:
        bad = (flat < 0) | (flat >= n)
        if bool(bad.any()):
            first = int(flat[int(input._backend.argmax(bad))])
            raise IndexError(
                f"index_copy_(): index {first} is out of bounds for dimension {dim} with size {n}")
    return dim, flat


@op(method="index_copy", function="index_copy", grad_fn="IndexCopyBackward0",
    autocast=dict(cpu="promote"))
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of input with the slices of source written at index along dim.

    Args:
        dim (int): the dim index runs along.
        index (Tensor): 1-D int64 positions, one per slice of source along dim.
        source (Tensor): the slices written, of input's dtype.

    Where index repeats, which slice wins is unspecified.

    Example::

        >>> x = rustgrad.zeros(3, 2)
        >>> x.index_copy(0, rustgrad.tensor([2, 0]), rustgrad.tensor([[1., 2.], [3., 4.]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]])
    """
    dim, flat = _check_index_copy(input, dim, index, source)
    d, s = input._data, source._data
    out = d.reshape(d.shape or (1,)).copy()
    src = s.reshape(out.shape[:dim] + (flat.size,) + out.shape[dim + 1:])
    out[(slice(None),) * dim + (flat,)] = src
    return INDEX_COPY.record(out.reshape(d.shape), (input, source),
                             (dim, flat, s.shape, index), source=source)


@op(method="index_copy_")
def index_copy_(self: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """In-place index_copy: writes the slices of source into self at index along dim."""
    return _inplace(self, index_copy, (source,), dim, index, source)


# ---- take / put --------------------------------------------------------------------------------
def _flat_index(name: str, input: Tensor, index: Tensor) -> Any:
    """index's entries as positions in input's flattened entries (negative ones from the end)."""
    idx = index._data
    same_device(input._data, idx)
    if idx.dtype != _INT64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got "
                           f"{_dtype.scalar_type_name(index.dtype)}")
    n = int(input._data.size)
    if idx.size:
        bad = (idx < -n) | (idx >= n)
        if bool(bad.any()):
            first = int(idx.reshape(-1)[int(input._backend.argmax(bad.reshape(-1)))])
            raise IndexError(
                f"out of range: tried to access index {first} on a tensor of {n} elements.")
    return idx % n if n else idx


def _take_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    index = _const(ctx)
    return put(saved.self.new_zeros(saved.self.shape), index, g, accumulate=True)


TAKE = node("TakeBackward0", _take_bw, saved=("self",), getters={"index": lambda s, c: _const(c)})


@op(method="take", function="take", grad_fn="TakeBackward0")
def take(input: Tensor, index: Tensor) -> Tensor:
    """The entries of input, read as a flat tensor, at index (the result has index's shape).

    Args:
        index (Tensor): int64 positions into input's flattened entries; negative ones count
            from the end.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).take(rustgrad.tensor([[3, 0], [-1, 1]]))
        tensor([[4, 1],
                [4, 2]])
    """
    flat = _flat_index("take", input, index)
    out = input._data.reshape(-1)[flat]
    return TAKE.record(out, (input,), index._data, self=input)


def _put_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    idx, accumulate, source_shape = ctx
    index = _const(idx)
    gs = g if accumulate else put(g, index, g.new_zeros(idx.shape))
    return gs, g.take(index).reshape(source_shape)


PUT = node("PutBackward0", _put_bw, saved=("source",),
           getters={"index": lambda s, c: _const(c[0]), "accumulate": lambda s, c: c[1]})


@op(method="put", function="put", grad_fn="PutBackward0")
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of input, read as a flat tensor, with source's entries written at index.

    Args:
        index (Tensor): int64 positions into input's flattened entries; negative ones count
            from the end.
        source (Tensor): as many entries as index, of input's dtype.
        accumulate (bool, optional): add to the entries instead of overwriting (repeated
            positions then all add up). Default: False.

    Example::

        >>> x = rustgrad.zeros(2, 2)
        >>> x.put(rustgrad.tensor([0, 3, 3]), rustgrad.tensor([1., 2., 5.]), accumulate=True)
        tensor([[1., 0.],
                [0., 7.]])
    """
    d, s = input._data, source._data
    same_device(d, s)
    if s.dtype != d.dtype:
        raise RuntimeError(
            "put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{_dtype.scalar_type_name(input.dtype)} and source.dtype = "
            f"{_dtype.scalar_type_name(source.dtype)}")
    if s.size != index._data.size:
        raise IndexError(
            "put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {s.size}, index.numel() = {index._data.size}")
    flat = _flat_index("put_", input, index).reshape(-1)
    out = d.copy()
    view = out.reshape(-1)
    if accumulate:
        _add_at(input._backend, view, flat, s.reshape(-1))
    else:
        view[flat] = s.reshape(-1)
    return PUT.record(out, (input, source), (flat, bool(accumulate), s.shape), source=source)


@op(method="put_")
def put_(self: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place put: writes (or adds) source's entries into self, read as flat, at index."""
    return _inplace(self, put, (source,), index, source, accumulate)
