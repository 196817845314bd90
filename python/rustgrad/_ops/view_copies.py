"""The view ops' copying forms, torch's `*_copy` functions (alias_copy, permute_copy,
split_copy, ...), narrow_copy, and as_strided_scatter.

Each is its view op followed by a copy: the result has storage of its own (contiguous), and one
node named as torch names it, the view's node with `_copy` appended (`PermuteBackward0_copy`),
whose formula is the view's own, straight over the input. The view op itself runs first on a
detached alias of the input, so that its checks and messages are the view's."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from .. import _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from . import views as _views
from ._declare import op
from ._node import node
from ._util import NOT_IMPLEMENTED, const, same_device
from .copyslices import _as_strided_bw, _outside_view
from .copyslices import as_strided as _as_strided_of


def _copy_spec(view_spec: Any, variant: bool = False) -> Any:
    """The `<view node>_copy` spec: the view's formula under torch's name for the copy
    (variant: a name another op's spec states too, torch.diag's DiagonalBackward0_copy)."""
    return node(f"{view_spec.name}_copy", view_spec.backward, variant=variant)


def _identity_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


ALIAS_COPY = node("AliasBackward0_copy", _identity_bw)
AS_STRIDED_COPY = node("AsStridedBackward0_copy", _as_strided_bw)
DIAGONAL_COPY = _copy_spec(_views.DIAGONAL, variant=True)
EXPAND_COPY = _copy_spec(_views.EXPAND)
NARROW_COPY = node("NarrowCopyBackward0", _views.SLICE.backward)
PERMUTE_COPY = _copy_spec(_views.PERMUTE)
SELECT_COPY = _copy_spec(_views.SELECT)
SLICE_COPY = _copy_spec(_views.SLICE)
SPLIT_COPY = _copy_spec(_views.SPLIT)
SPLIT_WITH_SIZES_COPY = _copy_spec(_views.SPLIT_WITH_SIZES)
SQUEEZE_COPY = _copy_spec(_views.SQUEEZE)
SQUEEZE_DIM_COPY = _copy_spec(_views.SQUEEZE_DIM)
SQUEEZE_DIMS_COPY = _copy_spec(_views.SQUEEZE_DIMS)
T_COPY = _copy_spec(_views.T_NODE)
TRANSPOSE_COPY = _copy_spec(_views.TRANSPOSE)
UNBIND_COPY = _copy_spec(_views.UNBIND)
UNFOLD_COPY = _copy_spec(_views.UNFOLD)
UNSQUEEZE_COPY = _copy_spec(_views.UNSQUEEZE)
VIEW_COPY = _copy_spec(_views.VIEW)

# the nodes the split copies' gradients record under create_graph (the view formulas' own)
_SPLIT_GRADS = ("CatBackward0", "SliceBackward0")


def _copy(spec: Any, input: Tensor, view: Tensor, ctx: Any) -> Tensor:
    """view's values in storage of their own, recorded as `spec` over input."""
    return spec.record(view._data.copy(), (input,), ctx)


def _copies(spec: Any, input: Tensor, views: Sequence[Tensor], ctx: Any) -> Tuple[Tensor, ...]:
    return spec.record_multi(tuple(v._data.copy() for v in views), (input,), ctx)


def _int_list(name: str, arg: str, value: Any) -> Tuple[int, ...]:
    """torch's `int[]` argument: a sequence of ints (one int is refused, as torch's parser
    refuses it where the list is not the last positional argument)."""
    if isinstance(value, Tensor) or not isinstance(value, (list, tuple)):
        if isinstance(value, int):
            return (value,)
        raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, not "
                        f"{type(value).__name__}")
    return tuple(int(v) for v in value)


def _int_arg(name: str, arg: str, position: int, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return value


# ---- one view, copied ------------------------------------------------------------------------
@op(function="alias_copy", grad_fn="AliasBackward0_copy")
def alias_copy(input: Tensor) -> Tensor:
    """A copy of input (torch's alias, copied).

    Example::

        >>> x = rustgrad.tensor([1., 2.])
        >>> y = rustgrad.alias_copy(x)
        >>> y.data_ptr() != x.data_ptr()
        True
    """
    return ALIAS_COPY.record(input._data.copy(), (input,))


@op(function="as_strided_copy", grad_fn="AsStridedBackward0_copy")
def as_strided_copy(input: Tensor, size: Sequence[int], stride: Sequence[int],
                    storage_offset: Optional[int] = None) -> Tensor:
    """as_strided(input, size, stride, storage_offset), copied.

    Args:
        input (Tensor): the input tensor; the elements are read from its storage (its base's).
        size (tuple of ints): the result's shape.
        stride (tuple of ints): the strides into the storage, in elements.
        storage_offset (int, optional): where to start in the storage. Default: input's own
            offset.

    Example::

        >>> rustgrad.as_strided_copy(rustgrad.arange(6.), (2, 2), (1, 2))
        tensor([[0., 2.],
                [1., 3.]])
    """
    arr, geometry = _views._strided(input, size, stride, storage_offset)
    return AS_STRIDED_COPY.record(arr.copy(), (input,), geometry)


@op(function="detach_copy", grad_fn="torch::autograd::NotImplemented")
def detach_copy(input: Tensor) -> Tensor:
    """A copy of input; as torch's, it has no derivative (backward through it raises).

    Example::

        >>> rustgrad.detach_copy(rustgrad.tensor([1., 2.]))
        tensor([1., 2.])
    """
    return NOT_IMPLEMENTED.record(input._data.copy(), (input,), "detach_copy")


@op(function="diagonal_copy", grad_fn=("DiagonalBackward0_copy", "DiagonalBackwardBackward0"))
def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """diagonal(input, offset, dim1, dim2), copied.

    Args:
        offset (int, optional): which diagonal: above the main one when positive. Default: 0.
        dim1 (int, optional): the first dim of the matrices. Default: 0.
        dim2 (int, optional): the second dim of the matrices. Default: 1.

    Example::

        >>> rustgrad.diagonal_copy(rustgrad.tensor([[1, 2], [3, 4]]))
        tensor([1, 4])
    """
    v = _views.diagonal(input.detach(), offset, dim1, dim2)
    n = input._data.ndim
    ctx = (input._data.shape, offset, _wrap_dim(dim1, n), _wrap_dim(dim2, n))
    return _copy(DIAGONAL_COPY, input, v, ctx)


@op(function="expand_copy", grad_fn="ExpandBackward0_copy")
def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """input expanded to size (-1 keeps a size), copied.

    Args:
        size (tuple of ints): the new sizes.
        implicit (bool, optional): keyword-only; accepted for torch's signature.

    Example::

        >>> rustgrad.expand_copy(rustgrad.tensor([[1], [2]]), (2, 3))
        tensor([[1, 1, 1],
                [2, 2, 2]])
    """
    v = _views.expand(input.detach(), _int_list("expand_copy", "size", size))
    return _copy(EXPAND_COPY, input, v, input._data.shape)


@op(method="narrow_copy", function="narrow_copy",
    grad_fn=("NarrowCopyBackward0", "SliceBackwardBackward0"))
def narrow_copy(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """narrow(input, dim, start, length), copied.

    Args:
        dim (int): the dim to narrow.
        start (int or Tensor): the first index kept.
        length (int): how many entries to keep.

    Example::

        >>> rustgrad.arange(6).narrow_copy(0, 1, 3)
        tensor([1, 2, 3])
    """
    v = _views.narrow(input.detach(), dim, start, length)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    if isinstance(start, Tensor):
        start = int(start.item())
    if start < 0:
        start += d.shape[dim]
    idx = (slice(None),) * dim + (slice(start, start + length),)
    return _copy(NARROW_COPY, input, v, (d.shape, idx))


@op(function="permute_copy", grad_fn="PermuteBackward0_copy")
def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """permute(input, dims), copied.

    Args:
        dims (tuple of ints): the order: output dim i is input dim dims[i].

    Example::

        >>> rustgrad.permute_copy(rustgrad.zeros(2, 3, 4), (2, 0, 1)).shape
        torch.Size([4, 2, 3])
    """
    dims = _int_list("permute_copy", "dims", dims)
    v = _views.permute(input.detach(), dims)
    n = input._data.ndim
    inverse = [0] * len(dims)
    for i, x in enumerate(dims):
        inverse[_wrap_dim(x, n)] = i
    return _copy(PERMUTE_COPY, input, v, tuple(inverse))


@op(function="select_copy", grad_fn=("SelectBackward0_copy", "SliceBackwardBackward0"))
def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """select(input, dim, index), copied.

    Args:
        dim (int): the dim to index.
        index (int): the index taken (negative counts from the end).

    Example::

        >>> rustgrad.select_copy(rustgrad.tensor([[1, 2], [3, 4]]), 1, 0)
        tensor([1, 3])
    """
    v = _views.select(input.detach(), dim, index)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    index = int(index)
    if index < 0:
        index += d.shape[dim]
    return _copy(SELECT_COPY, input, v, (d.shape, (slice(None),) * dim + (index, Ellipsis)))


@op(function="slice_copy", grad_fn=("SliceBackward0_copy", "SliceBackwardBackward0"))
def slice_copy(input: Tensor, dim: int = 0, start: Optional[int] = None,
               end: Optional[int] = None, step: int = 1) -> Tensor:
    """input[start:end:step] along dim, copied (Python's slicing rules; step positive).

    Args:
        dim (int, optional): the dim to slice. Default: 0.
        start (int, optional): the first index. Default: the start.
        end (int, optional): the index to stop before. Default: the end.
        step (int, optional): the step, positive. Default: 1.

    Example::

        >>> rustgrad.slice_copy(rustgrad.arange(6), 0, 1, 6, 2)
        tensor([1, 3, 5])
    """
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, d.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    idx = (slice(None),) * dim + (slice(start, end, step),)
    return SLICE_COPY.record(d[idx].copy(), (input,), (d.shape, idx))


@op(function="squeeze_copy",
    grad_fn=("SqueezeBackward0_copy", "SqueezeBackward1_copy", "SqueezeBackward2_copy"))
def squeeze_copy(input: Tensor, dim: Any = None) -> Tensor:
    """squeeze(input, dim), copied.

    Args:
        dim (int or tuple of ints, optional): the dims to remove if they have size 1.

    Example::

        >>> rustgrad.squeeze_copy(rustgrad.zeros(1, 2, 1)).shape
        torch.Size([2])
    """
    v = _views.squeeze(input.detach(), dim)
    spec = SQUEEZE_COPY if dim is None else SQUEEZE_DIM_COPY if isinstance(dim, int) \
        else SQUEEZE_DIMS_COPY
    return _copy(spec, input, v, input._data.shape)


@op(function="t_copy", grad_fn="TBackward0_copy")
def t_copy(input: Tensor) -> Tensor:
    """t(input), copied (at most 2-D).

    Example::

        >>> rustgrad.t_copy(rustgrad.tensor([[1, 2]]))
        tensor([[1],
                [2]])
    """
    return _copy(T_COPY, input, _views.t(input.detach()), None)


@op(function="transpose_copy", grad_fn="TransposeBackward0_copy")
def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """transpose(input, dim0, dim1), copied.

    Args:
        dim0 (int): the first dim.
        dim1 (int): the second dim.

    Example::

        >>> rustgrad.transpose_copy(rustgrad.zeros(2, 3, 4), 0, 2).shape
        torch.Size([4, 3, 2])
    """
    v = _views.transpose(input.detach(), dim0, dim1)
    n = input._data.ndim
    return _copy(TRANSPOSE_COPY, input, v, (_wrap_dim(dim0, n), _wrap_dim(dim1, n)))


@op(function="unfold_copy", grad_fn=("UnfoldBackward0_copy", "UnfoldBackwardBackward0"))
def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """input.unfold(dimension, size, step), copied: every window of size entries, step apart.

    Args:
        dimension (int): the dim the windows run along.
        size (int): the window's length.
        step (int): the gap between window starts, positive.

    Example::

        >>> rustgrad.unfold_copy(rustgrad.arange(5), 0, 2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    v = _views.unfold(input.detach(), dimension, size, step)
    d = input._data
    return _copy(UNFOLD_COPY, input, v, (d.shape, _wrap_dim(dimension, d.ndim), size, step))


@op(function="unsqueeze_copy", grad_fn="UnsqueezeBackward0_copy")
def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """unsqueeze(input, dim), copied.

    Args:
        dim (int): where the new dim goes (negative counts from the end of the result).

    Example::

        >>> rustgrad.unsqueeze_copy(rustgrad.tensor([1, 2]), 0)
        tensor([[1, 2]])
    """
    v = _views.unsqueeze(input.detach(), dim)
    return _copy(UNSQUEEZE_COPY, input, v, _wrap_dim(dim, input._data.ndim + 1))


def _view_dtype(input: Tensor, dtype: _dtype.dtype) -> Tensor:
    """input's bytes read as dtype, copied (never differentiable, as torch's)."""
    d = input._data
    mine, theirs = d.dtype.itemsize, _dtype.to_np(dtype).itemsize
    if mine != theirs:
        what = (f"to view {_dtype.scalar_type_name(input.dtype)} as "
                f"{_dtype.scalar_type_name(dtype)} (different element sizes)")
        if d.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if mine < theirs and d.shape[-1] % (theirs // mine):
            raise RuntimeError(f"self.size(-1) must be divisible by {theirs // mine} {what}, "
                               f"but got {d.shape[-1]}")
    out = input._backend.ascontiguousarray(d).copy().view(_dtype.to_np(dtype))
    return const(out)


@op(function="view_copy", grad_fn="ViewBackward0_copy")
def view_copy(input: Tensor, size: Any) -> Tensor:
    """input with another shape (one entry may be -1), copied; or, given a dtype, its bytes
    read as that dtype, copied.

    Args:
        size (tuple of ints or rustgrad.dtype): the new shape, or the dtype to read as.

    Example::

        >>> rustgrad.view_copy(rustgrad.arange(6), (2, 3))
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    if isinstance(size, _dtype.dtype):
        return _view_dtype(input, size)
    shape = _views._infer(_int_list("view_copy", "size", size), input._data.size)
    return VIEW_COPY.record(input._data.reshape(shape).copy(), (input,), input._data.shape)


# ---- several views, copied -------------------------------------------------------------------
@op(function="split_copy", grad_fn=("SplitBackward0_copy", *_SPLIT_GRADS))
def split_copy(input: Tensor, split_size: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """split(input, split_size, dim), each piece copied.

    Args:
        split_size (int): each piece's size (the last may be smaller).
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.split_copy(rustgrad.arange(5), 2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    split_size = _int_arg("split_copy", "split_size", 2, split_size)
    pieces = _views.split(input.detach(), split_size, dim)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    sizes = tuple(p._data.shape[dim] for p in pieces)
    return _copies(SPLIT_COPY, input, pieces, (d.shape, dim, sizes, split_size))


@op(function="split_with_sizes_copy", grad_fn=("SplitWithSizesBackward0_copy", *_SPLIT_GRADS))
def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int],
                          dim: int = 0) -> Tuple[Tensor, ...]:
    """split_with_sizes(input, split_sizes, dim), each piece copied.

    Args:
        split_sizes (tuple of ints): the pieces' sizes, summing to the dim's size.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.split_with_sizes_copy(rustgrad.arange(5), [1, 4])
        (tensor([0]), tensor([1, 2, 3, 4]))
    """
    sizes = _int_list("split_with_sizes_copy", "split_sizes", split_sizes)
    pieces = _views.split_with_sizes(input.detach(), sizes, dim)
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    return _copies(SPLIT_WITH_SIZES_COPY, input, pieces, (d.shape, dim, sizes, None))


@op(function="unbind_copy", grad_fn=("UnbindBackward0_copy", "StackBackward0", "SelectBackward0"))
def unbind_copy(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:
    """unbind(input, dim), each slice copied.

    Args:
        dim (int, optional): the dim removed. Default: 0.

    Example::

        >>> rustgrad.unbind_copy(rustgrad.tensor([[1, 2], [3, 4]]), 1)
        (tensor([1, 3]), tensor([2, 4]))
    """
    pieces = _views.unbind(input.detach(), dim)
    d = input._data
    return _copies(UNBIND_COPY, input, pieces, (d.shape, _wrap_dim(dim, d.ndim), ()))


# ---- as_strided_scatter ------------------------------------------------------------------------
# ctx: (the output's layout in its storage, the strided part's): the input's gradient is g
# outside the part, src's the part of g
def _as_strided_scatter_bw(g: Tensor, saved: Any, geometry: Any) -> Any:
    return _outside_view(g, geometry), _as_strided_of(g, geometry)


AS_STRIDED_SCATTER = node("AsStridedScatterBackward0", _as_strided_scatter_bw, variant=True)


# (AsStridedScatterBackward0, which it records, is tests/ops/test_declarations.py's NOT_OPS
# entry: the name of as_strided's gradient under create_graph; so is CopySlices)
@op(method="as_strided_scatter", function="as_strided_scatter", grad_fn="AsStridedBackward0")
def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                       storage_offset: Optional[int] = None) -> Tensor:
    """A copy of input with src written where as_strided(size, stride, storage_offset) of the
    copy lies.

    Args:
        src (Tensor): the values written; its shape is size.
        size (tuple of ints): the strided part's shape.
        stride (tuple of ints): its strides, in elements of the copy's storage.
        storage_offset (int, optional): where it starts in that storage. Default: input's
            offset in its storage.

    The copy is of input's whole storage, with input's strides and offset in it, as torch's;
    its gradient goes to input outside the written elements and to src at them (torch 2.15's
    own derivative for input is the reverse, which its gradcheck refuses).

    Example::

        >>> rustgrad.zeros(2, 2).as_strided_scatter(rustgrad.ones(2), (2,), (3,))
        tensor([[1., 0.],
                [0., 1.]])
    """
    if not isinstance(src, Tensor):
        raise TypeError(f"as_strided_scatter(): argument 'src' (position 2) must be Tensor, not "
                        f"{type(src).__name__}")
    xp = input._backend
    d = input._data
    # the copy is of input's whole storage, laid out as input in it (torch's
    # clone_preserve_strides): the strided part's offset counts from that storage's start
    flat, span, own = _views._storage_geometry(input)
    storage = flat.copy()
    item = d.itemsize
    out = xp.as_strided(storage[own:], d.shape, d.strides)
    if type(out) is not type(storage):
        out = out.view(type(storage))
    part, geometry = _views._strided(const(storage), size, stride,
                                     own if storage_offset is None else storage_offset)
    if tuple(src._data.shape) != tuple(part.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._data.shape)}, slice size = {list(part.shape)}")
    same_device(d, src._data)
    xp.writable_view(part)[...] = src._data
    geometry = ((tuple(d.shape), tuple(st // item for st in d.strides), own), geometry[1])
    return AS_STRIDED_SCATTER.record(out, (input, src), geometry)
