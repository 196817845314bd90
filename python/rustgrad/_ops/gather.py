"""Index-driven ops: index_select, gather, scatter / scatter_add (and in place), masked_fill
(and in place), masked_select, take_along_dim, nonzero.

Every check (dtypes, shapes, index bounds) runs before anything is written, so an op that raises
leaves its inputs unchanged. Gradients of repeated indices add up."""

from __future__ import annotations

from typing import Any, Tuple

from .. import _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._util import (
    _type_name,
    as_scalar,
    cast_grad,
    check_inplace,
    check_internal_overlap,
    checked_int,
    is_grad_enabled,
    record,
    same_device,
    sum_to,
)
from ._util import (
    const as _const,
)
from .compare import where
from .copyslices import commit_inplace

_INT64 = _dtype.int64.np




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
def _scatter_add_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return _gather_raw(g, dim, idx)


def scatter_add_into_zeros(g: Tensor, shape: tuple, dim: int, idx: Any) -> Tensor:
    """zeros(shape).scatter_add(dim, idx, g) for an index array idx (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    if not shape:
        z[...] = g._data.reshape(())
    elif idx.size:
        _add_at(xp, z, _along(xp, idx, dim), g._data.reshape(idx.shape))
    return record(z, (g,), "ScatterAddBackward0", _scatter_add_zeros_bw, None, (shape, dim, idx))


def _gather_raw_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return scatter_add_into_zeros(g, shape, dim, idx)


def _gather_raw(x: Tensor, dim: int, idx: Any) -> Tensor:
    """x.gather(dim, idx) for a checked index array (differentiable in x)."""
    d = x._data
    if d.ndim == 0:
        return record(d.copy(), (x,), "GatherBackward0", _gather_raw_bw, None, (d.shape, 0, idx))
    out = d[_along(x._backend, idx, dim)]
    return record(out, (x,), "GatherBackward0", _gather_raw_bw, None, (d.shape, dim, idx))


def _index_add_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return _index_select_raw(g, dim, idx)


def _index_add_zeros(g: Tensor, shape: tuple, dim: int, idx: Any) -> Tensor:
    """zeros(shape).index_add(dim, idx, g) (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape or (1,), dtype=g._data.dtype)
    gd = g._data.reshape(z.shape[:dim] + (idx.size,) + z.shape[dim + 1:])
    lead = (slice(None),) * dim
    if idx.size:
        _add_at(xp, z, lead + (idx,), gd)
    return record(z.reshape(shape), (g,), "IndexAddBackward0", _index_add_zeros_bw, None,
                  (shape, dim, idx))


def _index_select_raw_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, idx = ctx
    return _index_add_zeros(g, shape, dim, idx)


def _index_select_raw(x: Tensor, dim: int, idx: Any) -> Tensor:
    d = x._data
    src = d.reshape(1) if d.ndim == 0 else d
    out = x._backend.take(src, idx, axis=dim)
    if d.ndim == 0:
        out = out.reshape(())
    return record(out, (x,), "IndexSelectBackward0", _index_select_raw_bw, None,
                  (d.shape, dim, idx))


# ---- index_select ----------------------------------------------------------------------
@op(method="index_select", function="index_select", grad_fn="IndexSelectBackward0")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of input at index along dim.

    Args:
        input (Tensor): the input tensor.
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
    if idx.dtype != _INT64:
        raise RuntimeError(f"{name}(): Expected dtype int64 for index")
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
    out = g.new_zeros(tuple(shape))
    out[tuple(slice(0, n) for n in g._data.shape)] = g
    return out


def _scatter_add_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, idx, src_shape = ctx
    return g, _pad_to(_gather_raw(g, dim, idx), src_shape)


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


@op(method="scatter", function="scatter", grad_fn=("ScatterBackward0", "ScatterBackward1"))
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
            existing entries instead of overwriting.

    Where index repeats without reduce, which write wins is unspecified.

    Example::

        >>> rustgrad.zeros(2, 3).scatter(1, rustgrad.tensor([[2], [0]]), rustgrad.tensor([[1.], [2.]]))
        tensor([[0., 0., 1.],
                [2., 0., 0.]])
    """
    if reduce is not None:
        raise NotImplementedError("rustgrad: scatter(reduce=...) is not supported")
    if src is None:
        src = value
    if not isinstance(src, Tensor):
        s = as_scalar(src)
        if s is None:
            raise TypeError(f"scatter(): argument 'value' must be Number, not {type(src).__name__}")
        out, dim, widx = _scatter_forward("scatter", input, dim, index, s, False)
        return record(out, (input,), "ScatterBackward1", _scatter_src_bw, None,
                      (dim, widx, None, False))
    out, dim, widx = _scatter_forward("scatter", input, dim, index, src, False)
    return record(out, (input, src), "ScatterBackward0", _scatter_src_bw, None,
                  (dim, widx, src._data.shape, True))


@op(method="scatter_add", function="scatter_add", grad_fn="ScatterAddBackward0")
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
    return record(out, (input, src), "ScatterAddBackward0", _scatter_add_bw, None,
                  (dim, widx, src._data.shape))


def _inplace(self: Tensor, out_of_place: Any, others: Tuple[Any, ...], *args: Any,
             **kw: Any) -> Tensor:
    """In-place through the out-of-place op: checks, then write and (with grad) rebase."""
    check_inplace(self)
    if out_of_place is not masked_fill:  # torch lets masked_fill_ write into expanded tensors
        check_internal_overlap(self)
    out = out_of_place(self, *args, **kw)
    if tuple(out._data.shape) != tuple(self._data.shape):
        raise RuntimeError(
            f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
            f"{list(out._data.shape)}"
        )
    needs_grad = self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad
                                           for o in others)
    if is_grad_enabled() and needs_grad:
        commit_inplace(self, out)  # on a view: the base's history becomes CopySlices
    else:
        self._data[...] = out._data
        self._bump_version()
    return self


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


def _masked_fill_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, shape, dtype, vmeta = ctx
    m = _const(mask)
    ga = cast_grad(sum_to(where(m, 0.0, g), shape), dtype)
    if vmeta is None:
        return ga
    vdt = vmeta
    gv = cast_grad(where(m, g, 0.0).sum(), vdt)
    return ga, gv


@op(method="masked_fill", function="masked_fill", grad_fn=("MaskedFillBackward0", "MaskedFillBackward1"))
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of input with value where mask is True.

    Args:
        input (Tensor): the input tensor.
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
    out = xp.where(xp.broadcast_to(md, shape), xp.asarray(v).astype(d.dtype), d)
    out = out.astype(d.dtype, copy=False)
    mask_b = xp.broadcast_to(md, shape)
    if vt:
        return record(out, (input, value), "MaskedFillBackward1", _masked_fill_bw, None,
                      (mask_b, d.shape, d.dtype, value._data.dtype))
    return record(out, (input,), "MaskedFillBackward0", _masked_fill_bw, None,
                  (mask_b, d.shape, d.dtype, None))


@op(method="masked_fill_")
def masked_fill_(self: Tensor, mask: Tensor, value: Any) -> Tensor:
    """In-place masked_fill: writes value into self where mask is True."""
    return _inplace(self, masked_fill, (value,), mask, value)


def _masked_scatter_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return masked_select(g, _const(ctx))


def _masked_scatter_zeros(g: Tensor, mask: Any) -> Tensor:
    xp = g._backend
    z = xp.zeros(mask.shape, dtype=g._data.dtype)
    z[mask] = g._data
    return record(z, (g,), "MaskedScatterBackward0", _masked_scatter_zeros_bw, None, mask)


def _masked_select_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, shape, dtype = ctx
    return cast_grad(sum_to(_masked_scatter_zeros(g, mask), shape), dtype)


@op(method="masked_select", function="masked_select", grad_fn=("MaskedSelectBackward0", "MaskedScatterBackward0"))
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The entries of input where mask is True, as a 1-D tensor.

    Args:
        input (Tensor): the input tensor.
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
    return record(out, (input,), "MaskedSelectBackward0", _masked_select_bw, None,
                  (mb, d.shape, d.dtype))


# ---- nonzero ---------------------------------------------------------------------------
@op(method="nonzero", function="nonzero")
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of the non-zero entries (one row each, or a tuple of index tensors).

    Args:
        input (Tensor): the input tensor.
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
def _index_fill_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    mask, has_value, vdt = ctx
    m = _const(mask)
    ga = where(m, 0.0, g)
    if not has_value:
        return ga
    return ga, cast_grad(where(m, g, 0.0).sum(), vdt)


@op(method="index_fill", function="index_fill", grad_fn=("IndexFillBackward0", "IndexFillBackward1"))
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of input with value in the slices of dim that index names.

    Args:
        input (Tensor): the input tensor.
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
        return record(out, (input, value), "IndexFillBackward1", _index_fill_bw, None,
                      (mask, True, value._data.dtype))
    return record(out, (input,), "IndexFillBackward0", _index_fill_bw, None, (mask, False, None))


@op(method="index_fill_")
def index_fill_(self: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """In-place index_fill: writes value into the slices of dim that index names."""
    return _inplace(self, index_fill, (value,), dim, index, value)
