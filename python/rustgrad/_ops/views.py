"""Shapes and views: ops whose result shares storage and version counter with their input.
view/reshape/ravel, flatten/unflatten, transpose/swapaxes/t/T/mT, permute, movedim, (un)squeeze,
expand/broadcast_to/broadcast_tensors, narrow, select, unbind, split/chunk/tensor_split and
hsplit/vsplit/dsplit, diagonal, unfold, atleast_1d/2d/3d, as_strided, slice_inverse, and the view
ops done in place (t_, transpose_, squeeze_, unsqueeze_, as_strided_); unsafe_split /
unsafe_chunk / unsafe_split_with_sizes (split's pieces without view tracking) and torch.detach_.
Joins are in `joins`, rearranging copies (flip, roll, tril, repeat, ...) in `copies`, the views'
`*_copy` forms in `view_copies`."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any, Optional, Sequence, Tuple

from .. import _core, _dtype
from .._size import Size, _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
from ._util import check_broadcastable, check_inplace, is_grad_enabled, sum_to
from .copyslices import AS_STRIDED, _as_strided_bw


# ---- slices into zeros: the backward of the slicing views ------------------------------
def _embed_bw(g: Tensor, saved: Any, idx: Any) -> Any:
    return g[idx]


EMBED = node("SliceBackwardBackward0", _embed_bw)


def _embed(g: Tensor, shape: tuple, idx: tuple) -> Tensor:
    """zeros(shape) with g written at the basic index idx (differentiable in g)."""
    z = g._backend.zeros(shape, dtype=g._data.dtype)
    z[idx] = g._data
    return EMBED.record(z, (g,), idx)


# The views that take elements at a basic index (narrow, select, unbind, split and basic
# indexing, _ops/indexing.py): ctx is (input shape, index).
def _slice_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx = ctx
    return _embed(g, shape, idx)


def _slice_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    return tangents[0][ctx[1]]


SLICE = node("SliceBackward0", _slice_bw, forward=_slice_fw)
SELECT = node("SelectBackward0", _slice_bw, forward=_slice_fw)


# ---- split and unbind: one node for all the views returned together, as torch's ---------------
def _pieces_of(g: Tensor, dim: int, sizes: Sequence[int]) -> Tuple[Tensor, ...]:
    """g cut along dim as split cut its input (sizes), or as unbind did (sizes empty)."""
    if not sizes:
        return tuple(g.select(dim, i) for i in range(g._data.shape[dim]))
    lead = (slice(None),) * dim
    out = []
    start = 0
    for n in sizes:
        out.append(g[lead + (slice(start, start + n),)])
        start += n
    return tuple(out)


# the join of the pieces' gradients, torch's at::cat / at::stack in split's and unbind's backward:
# its own gradient cuts the join's gradient back into pieces (cat's and stack's specs are
# joins.py's)
JOIN_SPLIT = node("CatBackward0", lambda g, saved, ctx: _pieces_of(g, *ctx), variant=True)
JOIN_UNBIND = node("StackBackward0", lambda g, saved, ctx: _pieces_of(g, *ctx), variant=True)


def _join_bw(grads: Any, saved: Any, ctx: Any) -> Any:
    """The input's gradient from its pieces' (None for a piece that got none): one buffer the
    pieces are written into, recorded as torch's cat (split) or stack (unbind)."""
    shape, dim, sizes = ctx[:3]
    grads = grads if isinstance(grads, tuple) else (grads,)
    g0 = next(g for g in grads if g is not None)
    z = g0._backend.empty(shape, dtype=g0._data.dtype)  # every element is written below
    lead = (slice(None),) * dim
    start = 0
    for i, g in enumerate(grads):
        n = sizes[i] if sizes else 1
        at = lead + ((slice(start, start + n),) if sizes else (i,))
        z[at] = 0 if g is None else g._data
        start += n
    return (JOIN_SPLIT if sizes else JOIN_UNBIND).record(z, grads, (dim, sizes))


def _dim_of(saved: Any, ctx: Any) -> int:
    return ctx[1]


UNBIND = node("UnbindBackward0", _join_bw, getters={"dim": _dim_of})
SPLIT = node("SplitBackward0", _join_bw, getters={
    "dim": _dim_of, "self_sym_sizes": lambda s, c: tuple(c[0]), "split_size": lambda s, c: c[3]})
SPLIT_WITH_SIZES = node("SplitWithSizesBackward0", _join_bw, getters={
    "dim": _dim_of, "self_sym_sizes": lambda s, c: tuple(c[0]),
    "split_sizes": lambda s, c: tuple(c[2])})


def _view(a: Tensor, idx: tuple, spec: Any) -> Tensor:
    d = a._data
    # record's fourth argument, view_of (positional: a keyword costs the hot path ~0.15 µs)
    return spec.record(d[idx], (a,), (d.shape, idx), a)


# ---- narrow, select, unbind ------------------------------------------------------------
@op(method="narrow", function="narrow", grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """A view of length entries of input along dim, from start.

    Args:
        dim (int): the dim to narrow.
        start (int or Tensor): the first index kept.
        length (int): how many entries to keep.

    Example::

        >>> rustgrad.arange(6).narrow(0, 1, 3)
        tensor([1, 2, 3])
    """
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, d.ndim)
    if isinstance(start, Tensor):
        start = int(start.item())
    size = d.shape[dim]
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({size})."
        )
    return _view(input, (slice(None),) * dim + (slice(start, start + length),), SLICE)


@op(method="select", function="select", grad_fn=("SelectBackward0", "SliceBackwardBackward0"))
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """A view of input at index along dim, without that dim.

    Args:
        dim (int): the dim to index.
        index (int): the index taken (negative counts from the end).

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).select(1, 0)
        tensor([1, 3])
    """
    d = input._data
    if d.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    dim = _wrap_dim(dim, d.ndim)
    index = int(index)
    size = d.shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(d.shape)} at "
            f"dimension {dim}"
        )
    if index < 0:
        index += size
    return _view(input, (slice(None),) * dim + (index, Ellipsis), SELECT)


@op(method="unbind", function="unbind", grad_fn=("UnbindBackward0", "SliceBackwardBackward0"))
def unbind(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:
    """The slices of input along dim, as a tuple of views.

    Args:
        dim (int, optional): the dim removed. Default: 0.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).unbind(1)
        (tensor([1, 3]), tensor([2, 4]))
    """
    d = input._data
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = _wrap_dim(dim, d.ndim)
    lead = (slice(None),) * dim
    views = tuple(d[lead + (i, Ellipsis)] for i in range(d.shape[dim]))
    return UNBIND.record_multi(views, (input,), (d.shape, dim, ()), view_of=input)


# ---- split, chunk ----------------------------------------------------------------------
def _pieces(input: Tensor, dim: int, sizes: Sequence[int], spec: Any,
            split_size: Any = None) -> Tuple[Tensor, ...]:
    """input's views cut along dim (sizes), all recorded by one node of `spec`."""
    d = input._data
    lead = (slice(None),) * dim
    views = []
    start = 0
    for n in sizes:
        views.append(d[lead + (slice(start, start + n),)])
        start += n
    return spec.record_multi(tuple(views), (input,), (d.shape, dim, tuple(sizes), split_size),
                             view_of=input)


@op(method="split", function="split", grad_fn=("SplitBackward0", "SliceBackwardBackward0"))
def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> Tuple[Tensor, ...]:
    """input cut along dim into pieces of a given size (or given sizes), as views.

    Args:
        tensor (Tensor): the input tensor.
        split_size_or_sections (int or list of ints): each piece's size (the last may be
            smaller), or the list of sizes.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(5).split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
        >>> rustgrad.arange(5).split([1, 4])
        (tensor([0]), tensor([1, 2, 3, 4]))
    """
    d = tensor._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = _wrap_dim(dim, d.ndim)
    n = d.shape[dim]
    s = split_size_or_sections
    if isinstance(s, int):
        if s < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
        if s == 0 and n != 0:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
            )
        count = builtins.max((n + s - 1) // s, 1) if s else 1
        sizes = [builtins.min(s, n - i * s) for i in range(count)]
        return _pieces(tensor, dim, sizes, SPLIT, s)
    return split_with_sizes(tensor, s, dim)


@op(method="split_with_sizes", function="split_with_sizes",
    grad_fn=("SplitWithSizesBackward0", "SliceBackwardBackward0"))
def split_with_sizes(tensor: Tensor, split_sizes: Sequence[int], dim: int = 0) -> Tuple[Tensor,
                                                                                         ...]:
    """input cut along dim into pieces of the given sizes, as views."""
    d = tensor._data
    dim = _wrap_dim(dim, d.ndim)
    sizes = [int(x) for x in split_sizes]
    n = d.shape[dim]
    if any(x < 0 for x in sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            f"split_sizes={sizes}"
        )
    if builtins.sum(sizes) != n:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
            f"dimension {dim}), but got split_sizes={sizes}"
        )
    return _pieces(tensor, dim, sizes, SPLIT_WITH_SIZES)


@op(method="chunk", function="chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """input cut along dim into at most chunks equal pieces, as views.

    Args:
        chunks (int): the number of pieces wanted.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(5).chunk(2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    dim, size = _chunk_size(input, chunks, dim)
    if size is None:
        return split_with_sizes(input, [0] * chunks, dim)
    return split(input, size, dim)


def _chunk_size(input: Tensor, chunks: int, dim: int) -> Tuple[int, Optional[int]]:
    """chunk's checks, then (the wrapped dim, each piece's size); size None: dim has no entries,
    so the pieces are `chunks` empty ones."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = _wrap_dim(dim, d.ndim)
    n = d.shape[dim]
    return dim, (None if n == 0 else (n + chunks - 1) // chunks)


# ---- unsafe_split, unsafe_chunk: split's pieces, outside autograd's view tracking ----------------
# The pieces share the input's memory but are no views to autograd (no base, versions of their
# own), so in-place writes to them are not checked against each other, as torch's.
UNSAFE_SPLIT = node("UnsafeSplitBackward0", _join_bw, getters={
    "dim": _dim_of, "self_sym_sizes": lambda s, c: tuple(c[0]), "split_size": lambda s, c: c[3]})
UNSAFE_SPLIT_WITH_SIZES = node("UnsafeSplitWithSizesBackward0", _join_bw, getters={
    "dim": _dim_of, "self_sym_sizes": lambda s, c: tuple(c[0]),
    "split_sizes": lambda s, c: tuple(c[2])})


def _unsafe_pieces(input: Tensor, pieces: Tuple[Tensor, ...], dim: int, spec: Any,
                   split_size: Any = None) -> Tuple[Tensor, ...]:
    """The arrays of split's views `pieces`, recorded by one node of `spec` with no view
    relation to input."""
    d = input._data
    sizes = tuple(p._data.shape[dim] for p in pieces)
    return spec.record_multi(tuple(p._data for p in pieces), (input,),
                             (d.shape, dim, sizes, split_size))


def _split_size_int(name: str, position: int, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}(): argument 'split_size' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return value


@op(method="unsafe_split", function="unsafe_split",
    grad_fn=("UnsafeSplitBackward0", "CatBackward0", "SliceBackward0"))
def unsafe_split(input: Tensor, split_size: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """split(input, split_size, dim) without autograd's checks of in-place writes: the pieces
    share input's memory but are not views to autograd.

    Args:
        split_size (int): each piece's size (the last may be smaller).
        dim (int, optional): the dim to cut. Default: 0.

    Writing in place into both input and a piece gives wrong gradients silently, as in torch.

    Example::

        >>> rustgrad.arange(5).unsafe_split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    split_size = _split_size_int("unsafe_split", 1, split_size)
    pieces = split(input.detach(), split_size, dim)
    return _unsafe_pieces(input, pieces, _wrap_dim(dim, input._data.ndim), UNSAFE_SPLIT,
                          split_size)


@op(method="unsafe_split_with_sizes", function="unsafe_split_with_sizes",
    grad_fn=("UnsafeSplitWithSizesBackward0", "CatBackward0", "SliceBackward0"))
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int],
                            dim: int = 0) -> Tuple[Tensor, ...]:
    """split_with_sizes(input, split_sizes, dim) without autograd's checks of in-place writes
    (see unsafe_split).

    Args:
        split_sizes (tuple of ints): the pieces' sizes, summing to the dim's size.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(5).unsafe_split_with_sizes([1, 4])
        (tensor([0]), tensor([1, 2, 3, 4]))
    """
    if not isinstance(split_sizes, (list, tuple)) or isinstance(split_sizes, Tensor):
        raise TypeError("unsafe_split_with_sizes(): argument 'split_sizes' (position 2) must be "
                        f"tuple of ints, not {type(split_sizes).__name__}")
    pieces = split_with_sizes(input.detach(), split_sizes, dim)
    return _unsafe_pieces(input, pieces, _wrap_dim(dim, input._data.ndim),
                          UNSAFE_SPLIT_WITH_SIZES)


@op(method="unsafe_chunk", function="unsafe_chunk",
    grad_fn=("UnsafeSplitBackward0", "CatBackward0", "SliceBackward0"))
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """chunk(input, chunks, dim) without autograd's checks of in-place writes (see
    unsafe_split).

    Args:
        chunks (int): the number of pieces wanted.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(5).unsafe_chunk(2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    dim, size = _chunk_size(input, chunks, dim)
    if size is None:
        pieces = split_with_sizes(input.detach(), [0] * chunks, dim)
        return _unsafe_pieces(input, pieces, dim, UNSAFE_SPLIT_WITH_SIZES)
    return unsafe_split(input, size, dim)


# ---- slice_inverse -----------------------------------------------------------------------------
# ctx: (dim, start, end, step): the gradient is the slice of g that input was of src's shape
def _slice_inverse_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, start, end, step = ctx
    return g[(slice(None),) * _wrap_dim(dim, g._data.ndim) + (slice(start, end, step),)]


SLICE_INVERSE = node("SliceInverseBackward0", _slice_inverse_bw, getters={
    "dim": lambda s, c: c[0], "start": lambda s, c: c[1], "end": lambda s, c: c[2],
    "step": lambda s, c: c[3]})


@op(method="slice_inverse", function="slice_inverse",
    grad_fn=("SliceInverseBackward0", "SliceBackward0"))
def slice_inverse(input: Tensor, src: Tensor, dim: int = 0, start: Any = None, end: Any = None,
                  step: int = 1) -> Tensor:
    """The inverse of slicing: a view of input's storage laid out as src (src's size, strides
    and offset), where input is the slice ``[start:end:step]`` along dim of a tensor like src.

    Args:
        src (Tensor): the tensor whose layout the result takes (only its layout is read).
        dim (int, optional): the dim the slice was taken along. Default: 0.
        start (int, optional): the slice's start. Default: None.
        end (int, optional): the slice's end. Default: None.
        step (int, optional): the slice's step. Default: 1.

    Example::

        >>> base = rustgrad.arange(6.)
        >>> base[2:4].slice_inverse(base, 0, 2, 4)
        tensor([0., 1., 2., 3., 4., 5.])
    """
    out, _ = _strided(input, src._data.shape, src.stride(), src.storage_offset())
    return SLICE_INVERSE.record(out, (input,), (dim, start, end, step), input)


@op(function="detach_")
def detach_(input: Tensor) -> Tensor:
    """input detached from the graph in place (Tensor.detach_): a leaf that does not require
    grad; a view cannot be detached in place.

    Example::

        >>> x = rustgrad.ones(2, requires_grad=True) * 2
        >>> rustgrad.detach_(x).requires_grad
        False
    """
    return input.detach_()


# ---- diagonal, mT, movedim, unfold -----------------------------------------------------
def _diag_embed_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return diagonal(g, *ctx)


DIAGONAL_BACKWARD = node("DiagonalBackwardBackward0", _diag_embed_zeros_bw)


def _diag_into_zeros(g: Tensor, shape: tuple, offset: int, d1: int, d2: int) -> Tensor:
    """zeros(shape) with g on the diagonal (offset, d1, d2) (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    xp.writable_view(xp.diagonal(z, offset, d1, d2))[...] = g._data
    return DIAGONAL_BACKWARD.record(z, (g,), (offset, d1, d2))


# ctx: (input shape, offset, dim1, dim2)
def _diagonal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _diag_into_zeros(g, *ctx)


DIAGONAL = node("DiagonalBackward0", _diagonal_bw)


@op(method="diagonal", function="diagonal", grad_fn=("DiagonalBackward0", "DiagonalBackwardBackward0"))
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """A view of the diagonal of input over dims dim1 and dim2.

    Args:
        input (Tensor): the input tensor (at least 2-D).
        offset (int, optional): which diagonal: above the main one when positive. Default: 0.
        dim1 (int, optional): the first dim of the matrices. Default: 0.
        dim2 (int, optional): the second dim of the matrices. Default: 1.

    Example::

        >>> x = rustgrad.tensor([[1, 2], [3, 4]])
        >>> x.diagonal()
        tensor([1, 4])
        >>> x.diagonal(offset=1)
        tensor([2])
    """
    d = input._data
    d1, d2 = _wrap_dim(dim1, d.ndim), _wrap_dim(dim2, d.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    out = input._backend.writable_view(input._backend.diagonal(d, offset, d1, d2))
    return DIAGONAL.record(out, (input,), (d.shape, offset, d1, d2), input)


@op(prop="mT", grad_fn="TransposeBackward0")
def mT(input: Tensor) -> Tensor:  # noqa: N802  (torch's property name)
    """The last two dimensions swapped."""
    n = input._data.ndim
    if n < 2:
        raise RuntimeError(
            f"tensor.mT is only supported on matrices or batches of matrices. Got {n}-D tensor."
        )
    return transpose(input, -2, -1)


@op(method=("moveaxis", "movedim"), function=("moveaxis", "movedim"))
def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """A view of input with the dims at source moved to destination.

    Args:
        source (int or tuple of ints): the dims to move.
        destination (int or tuple of ints): where they go.

    Example::

        >>> rustgrad.zeros(2, 3, 4).movedim(0, -1).shape
        torch.Size([3, 4, 2])
    """
    n = input._data.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain "
            f"the same number of dims as destination ({dst} dims)"
        )
    ws = [_wrap_dim(x, n) for x in src]
    wd = [_wrap_dim(x, n) for x in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    order: list = [None] * builtins.max(n, 1)
    for s, t in zip(ws, wd):
        order[t] = s
    rest = iter(i for i in range(builtins.max(n, 1)) if i not in ws)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, tuple(order[:n]))


moveaxis = movedim


def _unfold_grad(g: Tensor, shape: tuple, dim: int, size: int, step: int) -> Tensor:
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    gd = g._data
    if shape:
        num = gd.shape[dim]
        lead = (slice(None),) * dim
        for k in range(size):
            z[lead + (slice(k, k + step * (num - 1) + 1, step),)] += gd[..., k]
    else:
        z[...] = gd.reshape(gd.size)[:1].sum()
    return UNFOLD_BACKWARD.record(z, (g,), (dim, size, step))


def _unfold_grad_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return unfold(g, *ctx)


UNFOLD_BACKWARD = node("UnfoldBackwardBackward0", _unfold_grad_bw)


# ctx: (input shape, dim, size, step)
def _unfold_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _unfold_grad(g, *ctx)


UNFOLD = node("UnfoldBackward0", _unfold_bw)


@op(method="unfold", grad_fn=("UnfoldBackward0", "UnfoldBackwardBackward0"))
def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """A view of all windows of size entries, step apart, along dimension."""
    d = input._data
    xp = input._backend
    dim = _wrap_dim(dimension, d.ndim)
    n = d.shape[dim] if d.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if d.ndim == 0:
        out = d.reshape(1)[:size]
    else:
        num = (n - size) // step + 1
        shape = d.shape[:dim] + (num,) + d.shape[dim + 1:] + (size,)
        st = d.strides
        strides = st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],)
        out = xp.as_strided(d, shape, strides)
        if type(out) is not type(d):  # an ndarray subclass backend keeps its array type
            out = out.view(type(d))
    return UNFOLD.record(out, (input,), (d.shape, dim, size, step), input)

# ---- reshape, transpose, permute, squeeze, expand ----------------------------------------------
def _shape_arg(shape: Any) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return tuple(map(int, shape))


def _infer(shape: tuple, numel: int) -> tuple:
    if -1 not in shape and math.prod(shape) == numel and (not shape or min(shape) >= 0):
        return shape  # nothing to infer, nothing wrong (the common case, checked in one go)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


# The views and copies that reshape: ctx is the input's shape.
def _reshape_bw(g: Tensor, saved: Any, shape: Any) -> Any:
    return g.reshape(shape)


VIEW = node("ViewBackward0", _reshape_bw)
RESHAPE_ALIAS = node("ReshapeAliasBackward0", _reshape_bw)
UNSAFE_VIEW = node("UnsafeViewBackward0", _reshape_bw)
SQUEEZE = node("SqueezeBackward0", _reshape_bw)  # squeeze(): every size-1 dim
SQUEEZE_DIM = node("SqueezeBackward1", _reshape_bw)  # squeeze(int)
SQUEEZE_DIMS = node("SqueezeBackward2", _reshape_bw)  # squeeze(tuple)


def _try_view(d: Any, shape: tuple) -> Any:
    v = d.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    return v


@op(method="view", grad_fn="ViewBackward0")
def view(input: Tensor, *shape: Any) -> Tensor:
    """A view of input with another shape (the same number of entries, compatible strides).

    Args:
        shape (ints or tuple of ints): the new shape; one entry may be -1, inferred.

    Shares input's storage: writing to one shows in the other. Use reshape when the strides may
    not allow a view.

    Example::

        >>> rustgrad.arange(6).view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
        >>> rustgrad.arange(6).view(-1, 2).shape
        torch.Size([3, 2])
    """
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("view(dtype) is not supported")
    d = input._data
    shape = _infer(_shape_arg(shape), d.size)
    v = _try_view(d, shape)
    if v is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return VIEW.record(v, (input,), d.shape, input)


@op(method="reshape", function="reshape",
    grad_fn=("UnsafeViewBackward0", "ViewBackward0", "ReshapeAliasBackward0"))
def reshape(input: Tensor, *shape: Any) -> Tensor:
    """input with another shape: a view when the strides allow it, else a copy.

    Args:
        shape (ints or tuple of ints): the new shape; one entry may be -1, inferred.

    Example::

        >>> rustgrad.arange(6).reshape(3, 2)
        tensor([[0, 1],
                [2, 3],
                [4, 5]])
    """
    d = input._data
    shape = _infer(_shape_arg(shape), d.size)
    v = _try_view(d, shape)
    if v is not None:
        # torch views a contiguous input, and aliases a strided one (_reshape_alias)
        spec = VIEW if d.flags.c_contiguous else RESHAPE_ALIAS
        return spec.record(v, (input,), d.shape, input)
    return UNSAFE_VIEW.record(d.reshape(shape), (input,), d.shape)


@op(method="flatten", function="flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """input with dims start_dim .. end_dim merged into one.

    Args:
        start_dim (int, optional): the first dim merged. Default: 0.
        end_dim (int, optional): the last dim merged. Default: -1.

    Example::

        >>> rustgrad.zeros(2, 3, 4).flatten().shape
        torch.Size([24])
        >>> rustgrad.zeros(2, 3, 4).flatten(1).shape
        torch.Size([2, 12])
    """
    d = input._data
    if d.ndim == 0:
        return reshape(input, 1)
    s = _wrap_dim(start_dim, d.ndim)
    e = _wrap_dim(end_dim, d.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for x in d.shape[s : e + 1]:
        n *= x
    return reshape(input, d.shape[:s] + (n,) + d.shape[e + 1 :])


@op(method="unflatten", function="unflatten", grad_fn="ViewBackward0")
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """input with dim split into sizes.

    Args:
        dim (int): the dim split.
        sizes (tuple of ints): the sizes it becomes (one may be -1).

    Example::

        >>> rustgrad.zeros(2, 12).unflatten(1, (3, 4)).shape
        torch.Size([2, 3, 4])
    """
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    return view(input, d.shape[:dim] + tuple(sizes) + d.shape[dim + 1 :])


def _transpose_bw(g: Tensor, saved: Any, dims: Any) -> Any:
    return g.transpose(*dims)


TRANSPOSE = node("TransposeBackward0", _transpose_bw, forward=ELEMENTWISE)  # its own inverse


@op(method="transpose", function="transpose", grad_fn="TransposeBackward0")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view of input with dims dim0 and dim1 swapped.

    Args:
        dim0 (int): the first dim.
        dim1 (int): the second dim.

    Example::

        >>> rustgrad.tensor([[1, 2, 3], [4, 5, 6]]).transpose(0, 1)
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    d = input._data
    n = d.ndim
    d0 = dim0 if type(dim0) is int and 0 <= dim0 < n else _wrap_dim(dim0, n)
    d1 = dim1 if type(dim1) is int and 0 <= dim1 < n else _wrap_dim(dim1, n)
    out = d.swapaxes(d0, d1) if n else d.view()
    return TRANSPOSE.record(out, (input,), (d0, d1), input)


def _t_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.t()


T_NODE = node("TBackward0", _t_bw, forward=ELEMENTWISE)  # its own inverse


@op(method="t", function="t", grad_fn="TBackward0")
def t(input: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dims (0-D and 1-D come back as they are).

    Example::

        >>> rustgrad.tensor([[1, 2]]).t()
        tensor([[1],
                [2]])
    """
    d = input._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return T_NODE.record(d.T, (input,), None, input)


def _permute_bw(g: Tensor, saved: Any, inverse: Any) -> Any:
    return g.permute(inverse)


def _permute_fw(tangents: Any, saved: Any, inverse: Any) -> Any:
    return tangents[0].permute([inverse.index(i) for i in range(len(inverse))])


PERMUTE = node("PermuteBackward0", _permute_bw, forward=_permute_fw)


@op(method="permute", function="permute", grad_fn="PermuteBackward0")
def permute(input: Tensor, *dims: Any) -> Tensor:
    """A view of input with its dims reordered.

    Args:
        dims (ints or tuple of ints): the order: output dim i is input dim dims[i].

    Example::

        >>> rustgrad.zeros(2, 3, 4).permute(2, 0, 1).shape
        torch.Size([4, 2, 3])
    """
    d = input._data
    dims = _shape_arg(dims)
    if len(dims) != d.ndim:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {d.ndim} is not "
            f"equal to len(dims) = {len(dims)}"
        )
    dims = tuple(_wrap_dim(x, d.ndim) for x in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inverse = [0] * len(dims)
    for i, x in enumerate(dims):
        inverse[x] = i
    return PERMUTE.record(d.transpose(dims), (input,), tuple(inverse), input)


# ctx: the dim unsqueeze inserted; or, for an index with None (_ops/indexing.py's getitem),
# (input shape, index), whose gradient is embedded as a slice's
def _unsqueeze_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    if type(ctx) is int:
        return g.squeeze(ctx)
    return _slice_bw(g, saved, ctx)


def _unsqueeze_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    t = tangents[0]
    return t.unsqueeze(ctx) if type(ctx) is int else t[ctx[1]]


UNSQUEEZE = node("UnsqueezeBackward0", _unsqueeze_bw, forward=_unsqueeze_fw)


@op(method="unsqueeze", function="unsqueeze", grad_fn="UnsqueezeBackward0")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view of input with a size-1 dim inserted at dim.

    Args:
        dim (int): where the new dim goes (negative counts from the end of the result).

    Example::

        >>> rustgrad.tensor([1, 2]).unsqueeze(0)
        tensor([[1, 2]])
        >>> rustgrad.tensor([1, 2]).unsqueeze(-1)
        tensor([[1],
                [2]])
    """
    d = input._data
    dim = _wrap_dim(dim, d.ndim + 1)
    out = d.reshape(d.shape[:dim] + (1,) + d.shape[dim:])
    return UNSQUEEZE.record(out, (input,), dim, input)


@op(
    method="squeeze",
    function="squeeze",
    grad_fn=("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"),
)
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """A view of input without its size-1 dims (or only those in dim).

    Args:
        dim (int or tuple of ints, optional): the dims to remove if they have size 1.

    Example::

        >>> rustgrad.zeros(1, 2, 1).squeeze().shape
        torch.Size([2])
        >>> rustgrad.zeros(1, 2, 1).squeeze(0).shape
        torch.Size([2, 1])
    """
    d = input._data
    if dim is None:
        shape = tuple(s for s in d.shape if s != 1)
        spec = SQUEEZE
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(x, d.ndim) for x in dims} if d.ndim else set()
        shape = tuple(s for i, s in enumerate(d.shape) if not (i in dims and s == 1))
        spec = SQUEEZE_DIM if isinstance(dim, int) else SQUEEZE_DIMS
    return spec.record(d.reshape(shape), (input,), d.shape, input)


# torch's formula, sum_to(grad, self.sizes()): the reduction is the op's own derivative
def _expand_bw(g: Tensor, saved: Any, shape: Any) -> Any:
    return sum_to(g, shape)


EXPAND = node("ExpandBackward0", _expand_bw)


@op(method="expand", grad_fn="ExpandBackward0")
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A view of input broadcast to sizes (-1 keeps a size); no copy.

    Args:
        sizes (ints or tuple of ints): the new sizes; only size-1 dims may grow, and new
            leading dims may be added.

    The expanded dims have stride 0, so the result should not be written to. The gradient is
    summed over the expanded dims.

    Example::

        >>> rustgrad.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
    """
    d = input._data
    sizes = _shape_arg(sizes)
    if len(sizes) < d.ndim:
        raise RuntimeError(
            f"expand(torch.{_dtype.LEGACY_NAMES[input.dtype.name]}{{{list(d.shape)}}}, "
            f"size={list(sizes)}): the number of sizes provided ({len(sizes)}) must be greater "
            f"or equal to the number of dimensions in the tensor ({d.ndim})"
        )
    lead = len(sizes) - d.ndim
    shape = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    "non-existing dimension 0"
                )
            shape.append(s)
            continue
        cur = d.shape[i - lead]
        if s == -1:
            s = cur
        if cur != s and cur != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{list(d.shape)}"
            )
        shape.append(s)
    out = input._backend.writable_view(input._backend.broadcast_to(d, tuple(shape)))  # torch's expand is writable
    return EXPAND.record(out, (input,), d.shape, input)


@op(method="expand_as")
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """input expanded to other's shape."""
    return expand(input, other._data.shape)

@op(method="view_as", grad_fn="ViewBackward0")
def view_as(input: Tensor, other: Tensor) -> Tensor:
    """input viewed with other's shape."""
    return view(input, other._data.shape)


@op(method="reshape_as", grad_fn=("UnsafeViewBackward0", "ViewBackward0"))
def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    """input reshaped to other's shape."""
    return reshape(input, other._data.shape)


_WARNED_T: list = []  # torch warns once per process


@op(prop="T", grad_fn="PermuteBackward0")
def T(input: Tensor) -> Tensor:  # noqa: N802  (torch's property name)
    """The dimensions reversed (permute), as torch's `.T` for every ndim.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).T
        tensor([[1, 3],
                [2, 4]])
    """
    if input._data.ndim not in (0, 2) and not _WARNED_T:
        _WARNED_T.append(True)
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return permute(input, tuple(reversed(range(input._data.ndim))))


# ---- broadcast_to ------------------------------------------------------------------------------
@op(method="broadcast_to", function="broadcast_to")
def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    """A view of input broadcast to shape.

    Args:
        shape (tuple of ints): the shape to broadcast to.

    Example::

        >>> rustgrad.tensor([1, 2]).broadcast_to((2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return input.expand(tuple(shape))


@op(method=("swapaxes", "swapdims"), function=("swapaxes", "swapdims"), grad_fn="TransposeBackward0")
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """A view of input with two dims swapped: transpose under NumPy's name (`swapdims` too).

    Args:
        axis0 (int): the first dim.
        axis1 (int): the second dim.

    Example::

        >>> rustgrad.zeros(2, 3, 4).swapaxes(0, 2).shape
        torch.Size([4, 3, 2])
    """
    return transpose(input, axis0, axis1)


@op(method="ravel", function="ravel", grad_fn=("ViewBackward0", "CloneBackward0"))
def ravel(input: Tensor) -> Tensor:
    """input flattened to one dim: a view when it is contiguous, else a contiguous copy's view.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).t().ravel()
        tensor([1, 3, 2, 4])
    """
    return view(input.contiguous(), -1)


# ---- atleast_1d/2d/3d ----------------------------------------------------------------------------
def _atleast(tensors: tuple, name: str, make: Any) -> Any:
    """torch's atleast_Nd calling forms: one tensor gives a tensor; several (or a sequence of
    them, or none) give a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], Tensor):
        return make(tensors[0])
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument 'tensors' must be tuple of Tensors, not "
                            f"{type(t).__name__} (at position {i})")
    return tuple(make(t) for t in tensors)


def _at1(t: Tensor) -> Tensor:
    return reshape(t, 1) if t._data.ndim == 0 else t


def _at2(t: Tensor) -> Tensor:
    n = t._data.ndim
    return reshape(t, 1, 1) if n == 0 else unsqueeze(t, 0) if n == 1 else t


def _at3(t: Tensor) -> Tensor:
    n = t._data.ndim
    if n == 0:
        return reshape(t, 1, 1, 1)
    if n == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    return unsqueeze(t, -1) if n == 2 else t


@op(function="atleast_1d", grad_fn="ViewBackward0")
def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least one dim (a 0-d tensor becomes shape (1,)), as views.

    Args:
        tensors (Tensor or sequence of Tensors): the inputs; one tensor gives one tensor back,
            several give a tuple.

    Example::

        >>> rustgrad.atleast_1d(rustgrad.tensor(3.))
        tensor([3.])
    """
    return _atleast(tensors, "atleast_1d", _at1)


@op(function="atleast_2d", grad_fn=("ViewBackward0", "UnsqueezeBackward0"))
def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least two dims (a 1-d one becomes a row), as views.

    Args:
        tensors (Tensor or sequence of Tensors): the inputs; one tensor gives one tensor back,
            several give a tuple.

    Example::

        >>> rustgrad.atleast_2d(rustgrad.tensor([1, 2])).shape
        torch.Size([1, 2])
    """
    return _atleast(tensors, "atleast_2d", _at2)


@op(function="atleast_3d", grad_fn=("ViewBackward0", "UnsqueezeBackward0"))
def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least three dims, as views: (n,) becomes (1, n, 1), (m, n) becomes
    (m, n, 1).

    Args:
        tensors (Tensor or sequence of Tensors): the inputs; one tensor gives one tensor back,
            several give a tuple.

    Example::

        >>> rustgrad.atleast_3d(rustgrad.zeros(2, 3)).shape
        torch.Size([2, 3, 1])
    """
    return _atleast(tensors, "atleast_3d", _at3)


# ---- tensor_split, hsplit, vsplit, dsplit --------------------------------------------------------
@op(method="tensor_split", function="tensor_split",
    grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> Tuple[Tensor, ...]:
    """input cut along dim into views: into n nearly equal pieces, or at the given indices.

    Args:
        input (Tensor): the input tensor (at least 1-D).
        indices_or_sections (int, sequence of ints or Tensor): a number of pieces n (the first
            `size % n` get one entry more), or the indices the pieces start at (slices
            `[0:i0], [i0:i1], ..., [ik:]`, Python's slicing rules); a 0-d int64 tensor is a
            number, a 1-d one the indices.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(7).tensor_split(3)
        (tensor([0, 1, 2]), tensor([3, 4]), tensor([5, 6]))
        >>> rustgrad.arange(7).tensor_split([1, 5])
        (tensor([0]), tensor([1, 2, 3, 4]), tensor([5, 6]))
    """
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    dim = _wrap_dim(dim, d.ndim)
    s = indices_or_sections
    if isinstance(s, Tensor):
        if s._data.ndim > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a "
                               "zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{s._data.ndim} dims")
        if s.dtype is not _dtype.int64:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of "
                               f"long, but got {_dtype.LEGACY_NAMES[s.dtype.name][:-6]}")
        s = int(s.item()) if s._data.ndim == 0 else [int(v) for v in s.tolist()]
    lead = (slice(None),) * dim
    if isinstance(s, int):
        if s <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {s}")
        n = d.shape[dim]
        small, extra = divmod(n, s)
        out, start = [], 0
        for i in range(s):
            size = small + (1 if i < extra else 0)
            out.append(_view(input, lead + (slice(start, start + size),), SLICE))
            start += size
        return tuple(out)
    bounds = [0, *(int(i) for i in s), None]
    return tuple(_view(input, lead + (slice(a, b),), SLICE) for a, b in zip(bounds, bounds[1:]))


def _split_at(input: Tensor, sections: Any, dim: int, name: str, need: int) -> Tuple[Tensor, ...]:
    """hsplit/vsplit/dsplit: tensor_split along dim, a number of sections dividing it evenly."""
    n = input._data.ndim
    if n < need:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {need} dimension, but "
                           f"got a tensor with {n} dimensions!")
    if isinstance(sections, int):
        size = input._data.shape[dim]
        if sections == 0 or size % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the split_size "
                               f"{sections}!")
    return tensor_split(input, sections, dim)


@op(method="hsplit", function="hsplit", grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def hsplit(input: Tensor, sections: Any) -> Tuple[Tensor, ...]:
    """input cut column-wise (along dim 1, or dim 0 of a 1-D tensor), as tensor_split does;
    a number of sections must divide that dim.

    Args:
        input (Tensor): the input tensor (at least 1-D).
        sections (int or sequence of ints): the number of equal pieces, or the indices to cut at.

    Example::

        >>> [p.shape for p in rustgrad.zeros(2, 4).hsplit(2)]
        [torch.Size([2, 2]), torch.Size([2, 2])]
    """
    n = input._data.ndim
    return _split_at(input, sections, 1 if n > 1 else 0, "hsplit", 1)


@op(method="vsplit", function="vsplit", grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def vsplit(input: Tensor, sections: Any) -> Tuple[Tensor, ...]:
    """input cut row-wise (along dim 0) as tensor_split does; it must be at least 2-D.

    Args:
        input (Tensor): the input tensor (at least 2-D).
        sections (int or sequence of ints): the number of equal pieces, or the indices to cut at.

    Example::

        >>> [p.shape for p in rustgrad.zeros(4, 2).vsplit([1])]
        [torch.Size([1, 2]), torch.Size([3, 2])]
    """
    return _split_at(input, sections, 0, "vsplit", 2)


@op(method="dsplit", function="dsplit", grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def dsplit(input: Tensor, sections: Any) -> Tuple[Tensor, ...]:
    """input cut depth-wise (along dim 2) as tensor_split does; it must be at least 3-D.

    Args:
        input (Tensor): the input tensor (at least 3-D).
        sections (int or sequence of ints): the number of equal pieces, or the indices to cut at.

    Example::

        >>> [p.shape for p in rustgrad.zeros(1, 2, 4).dsplit(2)]
        [torch.Size([1, 2, 2]), torch.Size([1, 2, 2])]
    """
    return _split_at(input, sections, 2, "dsplit", 3)


# ---- broadcasting --------------------------------------------------------------------------------
@op(function="broadcast_shapes")
def broadcast_shapes(*shapes: Any) -> Size:
    """The shape tensors of the given shapes broadcast to, computed without any tensor.

    Args:
        shapes (ints or sequences of ints): the shapes (an int is a 1-D shape).

    Example::

        >>> rustgrad.broadcast_shapes((2, 1), (3,))
        torch.Size([2, 3])
    """
    given = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    for shape in given:
        if any(isinstance(x, int) and x < 0 for x in shape):
            raise ValueError("Attempting to broadcast a dimension with negative length!")
    ndim = builtins.max((len(s) for s in given), default=0)
    result = [1] * ndim
    for i, shape in enumerate(given):
        for k in range(1, len(shape) + 1):
            x = shape[-k]
            if x == 1 or x == result[-k]:
                continue
            if result[-k] == 1:
                result[-k] = x
                continue
            raise RuntimeError(f"Attempting to broadcast a dimension of length {x} at {-k}! "
                               f"Mismatching argument at index {i} had {shape}; but expected shape "
                               f"should be broadcastable to {result}")
    return Size(result)


@op(function="broadcast_tensors", grad_fn="ExpandBackward0")
def broadcast_tensors(*tensors: Any) -> Tuple[Tensor, ...]:
    """The tensors expanded to their common broadcast shape, as views (one already of that shape
    comes back as it is).

    Args:
        tensors (Tensors): the inputs (or one sequence of them).

    Example::

        >>> a, b = rustgrad.broadcast_tensors(rustgrad.zeros(2, 1), rustgrad.zeros(3))
        >>> a.shape, b.shape
        (torch.Size([2, 3]), torch.Size([2, 3]))
    """
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shapes = [t._data.shape for t in tensors]
    check_broadcastable(*shapes)
    shape = tuple(broadcast_shapes(*shapes))
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


@op(method="sum_to_size", grad_fn=("SumBackward1", "ViewBackward0"))
def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """input summed down to size, which it must expand to (the inverse of expand); input itself
    when it already has that size.

    Args:
        size (ints or tuple of ints): the shape to sum to.

    Example::

        >>> rustgrad.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    shape = _shape_arg(size)
    d = input._data
    lead = d.ndim - len(shape)
    if lead < 0 or any(s != 1 and s != d.shape[lead + i] for i, s in enumerate(shape)):
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(d.shape)}}}.")
    return sum_to(input, shape)


# ---- as_strided ------------------------------------------------------------------------------
def _storage_geometry(input: Tensor) -> Tuple[Any, int, int]:
    """(a 1-D array over the memory of input's storage, the storage's size and input's offset
    in it, in elements): the storage is its base's memory, from its lowest element."""
    base = input._base if input._base is not None else input
    b = base._data
    xp = input._backend
    item = b.itemsize
    if b.ndim == 0:
        low = b.reshape(1)
    elif b.size == 0:
        low = b.reshape(-1)
    else:  # the element at the lowest address, as a one-element view
        low = b[tuple(slice(n - 1, n) if s < 0 else slice(0, 1) for n, s in zip(b.shape, b.strides))]
    span = 0 if b.size == 0 else 1 + builtins.sum((n - 1) * abs(s) // item
                                                  for n, s in zip(b.shape, b.strides))
    flat = xp.as_strided(low, (span,), (item,))
    if type(flat) is not type(b):  # an ndarray subclass backend keeps its array type
        flat = flat.view(type(b))
    offset = (xp.data_ptr(input._data) - xp.data_ptr(low)) // item
    return flat, span, offset


def _strided(input: Tensor, size: Any, stride: Any, storage_offset: Any) -> Tuple[Any, Any]:
    """The array of input's storage at (size, stride, storage_offset), and the geometry that
    places input and it in that storage (copyslices' AsStridedBackward0 context)."""
    size = tuple(int(s) for s in size)
    stride = tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: "
                           f"{list(size)}")
    flat, span, own = _storage_geometry(input)
    offset = own if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    empty = any(s == 0 for s in size)
    need = 0 if empty else offset + 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride))
    if need > span:
        item = flat.itemsize
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{offset}, and itemsize {item} requiring a storage size of "
                           f"{need * item} are out of bounds for storage of size {span * item}")
    xp = input._backend
    item = flat.itemsize
    start = flat[builtins.min(offset, span):]
    out = xp.as_strided(start, size, tuple(s * item for s in stride))
    if type(out) is not type(flat):
        out = out.view(type(flat))
    d = input._data
    own_layout = (tuple(d.shape), tuple(s // item for s in d.strides), own)
    return out, (own_layout, (size, stride, offset))


@op(method="as_strided", function="as_strided", grad_fn="AsStridedBackward0")
def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: Any = None) -> Tensor:
    """A view of input's storage with the given size, strides and offset (in elements).

    Args:
        input (Tensor): the input tensor; the view reads the memory of its storage (its base's).
        size (tuple of ints): the view's shape.
        stride (tuple of ints): the view's strides, in elements (non-negative).
        storage_offset (int, optional): where the view starts in the storage. Default: input's
            own offset.

    Elements the view reads more than once get the sum of their gradients, as torch's.

    Example::

        >>> rustgrad.arange(6.).as_strided((2, 2), (1, 2))
        tensor([[0., 2.],
                [1., 3.]])
    """
    out, geometry = _strided(input, size, stride, storage_offset)
    return AS_STRIDED.record(out, (input,), geometry, input)


# ---- view ops in place: t_, transpose_, squeeze_, unsqueeze_, as_strided_ -----------------------
def _t_inplace_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.t()


def _transpose_inplace_bw(g: Tensor, saved: Any, dims: Any) -> Any:
    return g.transpose(*dims)


def _unsqueeze_inplace_bw(g: Tensor, saved: Any, dim: Any) -> Any:
    return g.squeeze(dim)


T_INPLACE = node("TBackward1", _t_inplace_bw)
TRANSPOSE_INPLACE = node("TransposeBackward1", _transpose_inplace_bw)
UNSQUEEZE_INPLACE = node("UnsqueezeBackward1", _unsqueeze_inplace_bw)
SQUEEZE_INPLACE = node("SqueezeBackward3", _reshape_bw)  # squeeze_()
# squeeze_(tuple); squeeze_(int) too: torch's SqueezeBackward4 is the name _ops/linalg.py's
# matmul gives its one node for a vector operand (a spec has one formula)
SQUEEZE_INPLACE_DIMS = node("SqueezeBackward5", _reshape_bw)
AS_STRIDED_INPLACE = node("AsStridedBackward1", _as_strided_bw)


def _relayout(self: Tensor, new: Any, spec: Any, ctx: Any) -> Tensor:
    """Ends a view op done in place: self takes the layout `new` (a view of its own memory)
    and its version moves; in a graph, self's history becomes node `spec` over the old one.
    On a view of a tensor in a graph, the history is remade over the base's
    (AsStridedBackward0, copyslices.regenerate_view), where torch names the op's own node."""
    check_inplace(self)
    nbytes = self._storage_nbytes()
    if is_grad_enabled() and self.requires_grad and self._base is None:
        out = spec.record(new, (self,), ctx)
        self._set_data(new, nbytes)
        _core.rebase_history(self, out)
    else:
        self._set_data(new, nbytes)
        self._bump_version()
    return self


@op(method="t_", grad_fn="TBackward1")
def t_(self: Tensor) -> Tensor:
    """Transposes self (at most 2-D) in place: its shape and strides change, not its memory.

    Example::

        >>> x = rustgrad.zeros(2, 3)
        >>> x.t_().shape
        torch.Size([3, 2])
    """
    d = self._data
    if d.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return _relayout(self, d.T, T_INPLACE, None)


@op(method=("transpose_", "swapaxes_", "swapdims_"), grad_fn="TransposeBackward1")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Swaps dims dim0 and dim1 of self in place (`swapaxes_`, `swapdims_` too).

    Args:
        dim0 (int): the first dim.
        dim1 (int): the second dim.

    Example::

        >>> rustgrad.zeros(2, 3, 4).transpose_(0, 2).shape
        torch.Size([4, 3, 2])
    """
    d = self._data
    d0, d1 = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    new = self._backend.swapaxes(d, d0, d1) if d.ndim else d.view()
    return _relayout(self, new, TRANSPOSE_INPLACE, (d0, d1))


@op(method="unsqueeze_", grad_fn="UnsqueezeBackward1")
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """Inserts a size-1 dim into self at dim, in place.

    Args:
        dim (int): where the new dim goes (negative counts from the end of the result).

    Example::

        >>> rustgrad.zeros(3).unsqueeze_(0).shape
        torch.Size([1, 3])
    """
    d = self._data
    dim = _wrap_dim(dim, d.ndim + 1)
    return _relayout(self, d.reshape(d.shape[:dim] + (1,) + d.shape[dim:]), UNSQUEEZE_INPLACE, dim)


@op(method="squeeze_", grad_fn=("SqueezeBackward3", "SqueezeBackward5"))
def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    """Removes self's size-1 dims (or those of dim that have size 1), in place.

    Args:
        dim (int or tuple of ints, optional): the dims to remove if they have size 1.

    Example::

        >>> rustgrad.zeros(1, 3, 1).squeeze_().shape
        torch.Size([3])
    """
    d = self._data
    if dim is None:
        shape = tuple(s for s in d.shape if s != 1)
        spec = SQUEEZE_INPLACE
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(x, d.ndim) for x in dims} if d.ndim else set()
        shape = tuple(s for i, s in enumerate(d.shape) if not (i in dims and s == 1))
        spec = SQUEEZE_INPLACE_DIMS
    return _relayout(self, d.reshape(shape), spec, d.shape)


@op(method="as_strided_", function="as_strided_", grad_fn="AsStridedBackward1")
def as_strided_(self: Tensor, size: Sequence[int], stride: Sequence[int],
                storage_offset: Any = None) -> Tensor:
    """Gives self, in place, the layout (size, strides, offset) in its storage (as_strided).

    Args:
        size (tuple of ints): the new shape.
        stride (tuple of ints): the new strides, in elements (non-negative).
        storage_offset (int, optional): where self starts in its storage. Default: its own
            offset.

    Example::

        >>> rustgrad.arange(6.).as_strided_((3,), (2,))
        tensor([0., 2., 4.])
    """
    new, geometry = _strided(self, size, stride, storage_offset)
    return _relayout(self, new, AS_STRIDED_INPLACE, geometry)
