"""Shapes and views. Views share storage and version counter with their input: view/reshape,
flatten, transpose/t/T/mT, permute, (un)squeeze, expand, narrow, select, unbind, split, chunk,
diagonal, movedim, unfold, broadcast_to. Joins and rearranging copies: cat, stack, hstack,
vstack, tril/triu, flip, roll, repeat, repeat_interleave, tile."""

from __future__ import annotations

import builtins
import warnings
from typing import Any, List, Sequence, Tuple

from .. import _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._util import const as _const
from ._util import record, same_devices, sum_to
from .gather import index_select


def _int_list(args: Any) -> Tuple[int, ...]:
    """Varargs or one sequence of ints, as torch's IntArrayRef arguments."""
    if len(args) == 1 and not isinstance(args[0], int):
        args = args[0]
    if isinstance(args, int):
        return (args,)
    return tuple(int(a) for a in args)


# ---- slices into zeros: the backward of the slicing views ------------------------------
def _embed_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx = ctx
    return g[idx]


def _embed(g: Tensor, shape: tuple, idx: tuple) -> Tensor:
    """zeros(shape) with g written at the basic index idx (differentiable in g)."""
    z = g._backend.zeros(shape, dtype=g._data.dtype)
    z[idx] = g._data
    return record(z, (g,), "SliceBackwardBackward0", _embed_bw, None, (shape, idx))


def _slice_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, idx = ctx
    return _embed(g, shape, idx)


def _view(a: Tensor, idx: tuple, name: str) -> Tensor:
    d = a._data
    return record(d[idx], (a,), name, _slice_bw, None, (d.shape, idx), False, a)


# ---- narrow, select, unbind ------------------------------------------------------------
@op(method="narrow", function="narrow", grad_fn=("SliceBackward0", "SliceBackwardBackward0"))
def narrow(input: Tensor, dim: int, start: Any, length: int) -> Tensor:
    """A view of length entries of input along dim, from start.

    Args:
        input (Tensor): the input tensor.
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
    return _view(input, (slice(None),) * dim + (slice(start, start + length),), "SliceBackward0")


@op(method="select", function="select", grad_fn=("SelectBackward0", "SliceBackwardBackward0"))
def select(input: Tensor, dim: int, index: int) -> Tensor:
    """A view of input at index along dim, without that dim.

    Args:
        input (Tensor): the input tensor.
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
    return _view(input, (slice(None),) * dim + (index, Ellipsis), "SelectBackward0")


@op(method="unbind", function="unbind", grad_fn=("UnbindBackward0", "SliceBackwardBackward0"))
def unbind(input: Tensor, dim: int = 0) -> Tuple[Tensor, ...]:
    """The slices of input along dim, as a tuple of views.

    Args:
        input (Tensor): the input tensor.
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
    return _multi_output([_view(input, lead + (i, Ellipsis), "UnbindBackward0")
                          for i in range(d.shape[dim])])


# ---- split, chunk ----------------------------------------------------------------------
def _pieces(input: Tensor, dim: int, sizes: Sequence[int], name: str) -> Tuple[Tensor, ...]:
    lead = (slice(None),) * dim
    out = []
    start = 0
    for n in sizes:
        out.append(_view(input, lead + (slice(start, start + n),), name))
        start += n
    return _multi_output(out)


def _multi_output(views: List[Tensor]) -> Tuple[Tensor, ...]:
    """The views one function returns together: as torch's, none may be written in place
    with autograd, nor used once another (or their base) was."""
    for i, v in enumerate(views):
        v._set_multi_output(i)
    return tuple(views)


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
        return _pieces(tensor, dim, sizes, "SplitBackward0")
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
    return _pieces(tensor, dim, sizes, "SplitWithSizesBackward0")


@op(method="chunk", function="chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> Tuple[Tensor, ...]:
    """input cut along dim into at most chunks equal pieces, as views.

    Args:
        input (Tensor): the input tensor.
        chunks (int): the number of pieces wanted.
        dim (int, optional): the dim to cut. Default: 0.

    Example::

        >>> rustgrad.arange(5).chunk(2)
        (tensor([0, 1, 2]), tensor([3, 4]))
    """
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    dim = _wrap_dim(dim, d.ndim)
    n = d.shape[dim]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        return split_with_sizes(input, [0] * chunks, dim)
    return split(input, size, dim)


# ---- diagonal, mT, movedim, unfold -----------------------------------------------------
def _diag_embed_zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, offset, d1, d2 = ctx
    return diagonal(g, offset, d1, d2)


def _diag_into_zeros(g: Tensor, shape: tuple, offset: int, d1: int, d2: int,
                     name: str = "DiagonalBackwardBackward0") -> Tensor:
    """zeros(shape) with g on the diagonal (offset, d1, d2) (differentiable in g)."""
    xp = g._backend
    z = xp.zeros(shape, dtype=g._data.dtype)
    xp.writable_view(xp.diagonal(z, offset, d1, d2))[...] = g._data
    return record(z, (g,), name, _diag_embed_zeros_bw, None, (shape, offset, d1, d2))


def _diagonal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, offset, d1, d2 = ctx
    return _diag_into_zeros(g, shape, offset, d1, d2)


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
    return record(out, (input,), "DiagonalBackward0", _diagonal_bw, None,
                  (d.shape, offset, d1, d2), False, input)


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
        input (Tensor): the input tensor.
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
    return record(z, (g,), "UnfoldBackwardBackward0", _unfold_grad_bw, None,
                  (dim, size, step))


def _unfold_grad_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return unfold(g, *ctx)


def _unfold_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dim, size, step = ctx
    return _unfold_grad(g, shape, dim, size, step)


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
    return record(out, (input,), "UnfoldBackward0", _unfold_bw, None, (d.shape, dim, size, step),
                  False, input)


# ---- tril / triu, flip, roll -----------------------------------------------------------
def _tri_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    upper, k = ctx
    return triu(g, k) if upper else tril(g, k)


def _tri(input: Tensor, k: int, upper: bool) -> Tensor:
    d = input._data
    name = "triu" if upper else "tril"
    if d.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    xp = input._backend
    out = xp.triu(d, k) if upper else xp.tril(d, k)
    return record(out, (input,), "TriuBackward0" if upper else "TrilBackward0", _tri_bw, None,
                  (upper, k))


@op(method="tril", function="tril", grad_fn="TrilBackward0")
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """A copy of input with the entries above the diagonal set to zero.

    Args:
        input (Tensor): the input tensor (at least 2-D; the last two dims are the matrices).
        diagonal (int, optional): the diagonal kept last: above the main one when positive.
            Default: 0.

    Example::

        >>> rustgrad.ones(3, 3).tril()
        tensor([[1., 0., 0.],
                [1., 1., 0.],
                [1., 1., 1.]])
    """
    return _tri(input, diagonal, False)


@op(method="triu", function="triu", grad_fn="TriuBackward0")
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """A copy of input with the entries below the diagonal set to zero.

    Args:
        input (Tensor): the input tensor (at least 2-D; the last two dims are the matrices).
        diagonal (int, optional): the diagonal kept first: above the main one when positive.
            Default: 0.

    Example::

        >>> rustgrad.ones(3, 3).triu(diagonal=1)
        tensor([[0., 1., 1.],
                [0., 0., 1.],
                [0., 0., 0.]])
    """
    return _tri(input, diagonal, True)


def _flip_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return flip(g, ctx)


@op(method="flip", function="flip", grad_fn="FlipBackward0")
def flip(input: Tensor, *dims: Any) -> Tensor:
    """A copy of input reversed along the given dims.

    Args:
        input (Tensor): the input tensor.
        dims (int or tuple of ints): the dims to reverse.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).flip(1)
        tensor([[2, 1],
                [4, 3]])
    """
    d = input._data
    dl = _int_list(dims) if dims else ()
    wd = tuple(_wrap_dim(x, d.ndim) for x in dl)
    if len(set(wd)) != len(wd):
        raise RuntimeError(f"dim {wd[0]} appears multiple times in the list of dims")
    out = input._backend.flip(d, axis=wd).copy() if wd and d.ndim else d.copy()
    return record(out, (input,), "FlipBackward0", _flip_bw, None, wd)


def _roll_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shifts, dims = ctx
    return roll(g, tuple(-s for s in shifts), dims)


@op(method="roll", function="roll", grad_fn="RollBackward0")
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """A copy of input rolled by shifts along dims (the flattened input when dims is None).

    Args:
        input (Tensor): the input tensor.
        shifts (int or tuple of ints): by how many places; entries pushed off one end come back
            at the other.
        dims (int or tuple of ints, optional): the dims to roll along.

    Example::

        >>> rustgrad.tensor([1, 2, 3, 4]).roll(1)
        tensor([4, 1, 2, 3])
    """
    d = input._data
    sh = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        out = input._backend.roll(d, sh[0]) if d.size else d.copy()
        return record(out, (input,), "RollBackward0", _roll_bw, None, (sh, None))
    dm = (dims,) if isinstance(dims, int) else tuple(int(x) for x in dims)
    if len(sh) != len(dm):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dm)}")
    wd = tuple(_wrap_dim(x, d.ndim) for x in dm)
    if d.ndim == 0 or d.size == 0:
        out = d.copy()
    else:
        out = input._backend.roll(d, sh, axis=wd)
    return record(out, (input,), "RollBackward0", _roll_bw, None, (sh, dm))


# ---- repeat, tile, repeat_interleave ---------------------------------------------------
def _repeat_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    in_shape, sizes = ctx
    if not sizes:
        return g
    padded = (1,) * (len(sizes) - len(in_shape)) + tuple(in_shape)
    inter: list = []
    for r, s in zip(sizes, padded):
        inter += [r, s]
    gg = g.reshape(tuple(inter)).sum(tuple(range(0, 2 * len(sizes), 2)))
    return gg.reshape(in_shape)


@op(method="repeat", grad_fn="RepeatBackward0")
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """input tiled sizes times along each dimension.

    Args:
        input (Tensor): the input tensor.
        sizes (ints or tuple of ints): the number of copies per dim (at least input.dim()
            of them; extra leading ones add dims).

    Example::

        >>> rustgrad.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    sizes = _int_list(sizes)
    d = input._data
    if len(sizes) < d.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            "of tensor"
        )
    padded = (1,) * (len(sizes) - d.ndim) + d.shape
    out_shape = [r * s for r, s in zip(sizes, padded)]
    for s in out_shape:
        if s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {out_shape}"
            )
    out = input._backend.tile(d.reshape(padded), sizes) if sizes else d.copy()
    return record(out, (input,), "RepeatBackward0", _repeat_bw, None, (d.shape, sizes))


@op(method="tile", function="tile")
def tile(input: Tensor, *dims: Any) -> Tensor:
    """input tiled dims times along each dimension (leading ones filled in)."""
    dims = _int_list(dims) if dims else ()
    n = input._data.ndim
    if len(dims) < n:
        dims = (1,) * (n - len(dims)) + dims
    return repeat(input, dims)


@op(method="repeat_interleave", function="repeat_interleave")
def repeat_interleave(input: Tensor, repeats: Any = None, dim: Any = None, *,
                      output_size: Any = None) -> Tensor:
    """Each entry of input repeated repeats times along dim.

    Args:
        input (Tensor): the input tensor.
        repeats (int or Tensor): the number of copies, for every entry or one per entry.
        dim (int, optional): the dim to repeat along; the flattened input when None.
        output_size (int, optional): keyword-only; the total size along dim, if known.

    Example::

        >>> rustgrad.tensor([1, 2]).repeat_interleave(2)
        tensor([1, 1, 2, 2])
        >>> rustgrad.tensor([[1, 2], [3, 4]]).repeat_interleave(rustgrad.tensor([1, 2]), dim=0)
        tensor([[1, 2],
                [3, 4],
                [3, 4]])
    """
    xp = input._backend
    if repeats is None:  # repeat_interleave(counts): the indices repeated by the counts
        r = input._data
        if r.ndim > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        out = xp.repeat(xp.arange(r.size, dtype=_dtype.int64.np), r.reshape(-1))
        return _const(out)
    x = flatten(input) if dim is None else input
    dim = 0 if dim is None else _wrap_dim(dim, x._data.ndim)
    if x._data.ndim == 0:
        x = x.reshape(1)
    n = x._data.shape[dim]
    if isinstance(repeats, Tensor):
        rd = repeats._data
        if rd.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if rd.size == 1:
            counts = xp.full((n,), int(rd.reshape(-1)[0]), dtype=_dtype.int64.np)
        elif rd.size == n:
            counts = rd.reshape(-1)
        else:
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{rd.size} and input.size({dim}) = {n}"
            )
        if counts.size and bool((counts < 0).any()):
            raise RuntimeError("repeats can not be negative")
        index = xp.repeat(xp.arange(n, dtype=_dtype.int64.np), counts)
        return index_select(x, dim, _const(index))
    r = int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(x._data.shape)
    shape.insert(dim + 1, r)
    return flatten(x.unsqueeze(dim + 1).expand(tuple(shape)).clone(), dim, dim + 1)


# ---- reshape, transpose, permute, squeeze, expand, joins --------------------------------------
def _shape_arg(shape: Any) -> tuple:
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return tuple(int(s) for s in shape)


def _infer(shape: tuple, numel: int) -> tuple:
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


def _reshape_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.reshape(ctx)


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
        input (Tensor): the input tensor.
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
    return record(v, (input,), "ViewBackward0", _reshape_bw, None, d.shape, False, input)


@op(method="reshape", function="reshape",
    grad_fn=("UnsafeViewBackward0", "ViewBackward0", "ReshapeAliasBackward0"))
def reshape(input: Tensor, *shape: Any) -> Tensor:
    """input with another shape: a view when the strides allow it, else a copy.

    Args:
        input (Tensor): the input tensor.
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
        name = "ViewBackward0" if d.flags.c_contiguous else "ReshapeAliasBackward0"
        return record(v, (input,), name, _reshape_bw, None, d.shape, False, input)
    return record(d.reshape(shape), (input,), "UnsafeViewBackward0", _reshape_bw, None, d.shape)


@op(method="flatten", function="flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """input with dims start_dim .. end_dim merged into one.

    Args:
        input (Tensor): the input tensor.
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


@op(method="unflatten")
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """input with dim split into sizes.

    Args:
        input (Tensor): the input tensor.
        dim (int): the dim split.
        sizes (tuple of ints): the sizes it becomes (one may be -1).

    Example::

        >>> rustgrad.zeros(2, 12).unflatten(1, (3, 4)).shape
        torch.Size([2, 3, 4])
    """
    d = input._data
    dim = _wrap_dim(dim, d.ndim)
    return view(input, d.shape[:dim] + tuple(sizes) + d.shape[dim + 1 :])


def _transpose_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.transpose(*ctx)


@op(method="transpose", function="transpose", grad_fn="TransposeBackward0")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view of input with dims dim0 and dim1 swapped.

    Args:
        input (Tensor): the input tensor.
        dim0 (int): the first dim.
        dim1 (int): the second dim.

    Example::

        >>> rustgrad.tensor([[1, 2, 3], [4, 5, 6]]).transpose(0, 1)
        tensor([[1, 4],
                [2, 5],
                [3, 6]])
    """
    d = input._data
    d0, d1 = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    out = input._backend.swapaxes(d, d0, d1) if d.ndim else d.view()
    return record(out, (input,), "TransposeBackward0", _transpose_bw, None, (d0, d1), False, input)


def _t_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.t()


@op(method="t", function="t", grad_fn="TBackward0")
def t(input: Tensor) -> Tensor:
    """The transpose of a tensor of at most 2 dims (0-D and 1-D come back as they are).

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([[1, 2]]).t()
        tensor([[1],
                [2]])
    """
    d = input._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return record(d.T, (input,), "TBackward0", _t_bw, None, None, False, input)


def _permute_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.permute(ctx)


@op(method="permute", function="permute", grad_fn="PermuteBackward0")
def permute(input: Tensor, *dims: Any) -> Tensor:
    """A view of input with its dims reordered.

    Args:
        input (Tensor): the input tensor.
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
    return record(d.transpose(dims), (input,), "PermuteBackward0", _permute_bw, None,
                  tuple(inverse), False, input)


def _unsqueeze_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.squeeze(ctx)


@op(method="unsqueeze", function="unsqueeze", grad_fn="UnsqueezeBackward0")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A view of input with a size-1 dim inserted at dim.

    Args:
        input (Tensor): the input tensor.
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
    return record(out, (input,), "UnsqueezeBackward0", _unsqueeze_bw, None, dim, False, input)


@op(
    method="squeeze",
    function="squeeze",
    grad_fn=("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"),
)
def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """A view of input without its size-1 dims (or only those in dim).

    Args:
        input (Tensor): the input tensor.
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
        name = "SqueezeBackward0"
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(x, d.ndim) for x in dims} if d.ndim else set()
        shape = tuple(s for i, s in enumerate(d.shape) if not (i in dims and s == 1))
        name = "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"
    return record(d.reshape(shape), (input,), name, _reshape_bw, None, d.shape, False, input)


def _expand_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return sum_to(g, ctx)


@op(method="expand", grad_fn="ExpandBackward0")
def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A view of input broadcast to sizes (-1 keeps a size); no copy.

    Args:
        input (Tensor): the input tensor.
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
    return record(out, (input,), "ExpandBackward0", _expand_bw, None, d.shape, False, input)


@op(method="expand_as")
def expand_as(input: Tensor, other: Tensor) -> Tensor:
    """input expanded to other's shape."""
    return expand(input, other._data.shape)


def _cat_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, sizes, dtypes = ctx
    out = []
    start = 0
    lead = (slice(None),) * dim
    for n, dt in zip(sizes, dtypes):
        if n is None:  # a skipped legacy empty 1-D input: torch gives it zeros({0})
            piece = g[lead + (slice(0, 0),)].reshape(0)
            out.append(piece if piece._data.dtype == dt else piece.to(_dtype.from_np(dt)))
            continue
        piece = g[lead + (slice(start, start + n),)]
        out.append(piece if piece._data.dtype == dt else piece.to(_dtype.from_np(dt)))
        start += n
    return tuple(out)


@op(function=("cat", "concat"), grad_fn="CatBackward0")
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along an existing dim.

    Args:
        tensors (sequence of Tensors): tensors of the same shape except along dim (1-D empty
            tensors are skipped, as torch's).
        dim (int, optional): the dim to join along. Default: 0.

    `concat` is the same op.

    Example::

        >>> a = rustgrad.tensor([[1, 2]])
        >>> rustgrad.cat([a, a], dim=0)
        tensor([[1, 2],
                [1, 2]])
        >>> rustgrad.cat([a, a], dim=1)
        tensor([[1, 2, 1, 2]])
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {tensors.index(t)} in argument 0, but got "
                f"{type(t).__name__}"
            )
    # torch skips legacy empty 1-D tensors of shape (0,)
    used = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    ref = used[0] if used else tensors[0]
    if ref._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    dim = _wrap_dim(dim, ref._data.ndim)
    rt = _dtype.result_type(*[t for t in tensors]) if len({t._data.dtype for t in tensors}) > 1\
        else _dtype.from_np(ref._data.dtype)
    for i, t in enumerate(used):
        s, r = t._data.shape, ref._data.shape
        if len(s) != len(r):
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {len(r)} and {len(s)}"
            )
        for k in range(len(s)):
            if k != dim and s[k] != r[k]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size "
                    f"{r[k]} but got size {s[k]} for tensor number {i} in the list."
                )
    xp = ref._backend
    arrays = [t._data.astype(rt.np, copy=False) for t in used] or [ref._data]
    same_devices(arrays)
    out = xp.concatenate(arrays, axis=dim)
    sizes = tuple(
        None if (t._data.ndim == 1 and t._data.shape[0] == 0 and used) else t._data.shape[dim]
        for t in tensors
    )
    dtypes = tuple(t._data.dtype for t in tensors)
    return record(out, tuple(tensors), "CatBackward0", _cat_bw, None, (dim, sizes, dtypes))


concat = concatenate = cat


def _stack_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, n = ctx
    lead = (slice(None),) * dim
    return tuple(g[lead + (i,)] for i in range(n))


@op(function="stack", grad_fn="StackBackward0")
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along a new dim.

    Args:
        tensors (sequence of Tensors): tensors of the same shape.
        dim (int, optional): where the new dim goes. Default: 0.

    Example::

        >>> rustgrad.stack([rustgrad.tensor([1, 2]), rustgrad.tensor([3, 4])], dim=1)
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t._data.shape)} at entry {i}"
            )
    dim = _wrap_dim(dim, len(shape) + 1)
    rt = _dtype.result_type(*tensors).np if len({t._data.dtype for t in tensors}) > 1 else None
    arrays = [t._data if rt is None else t._data.astype(rt) for t in tensors]
    same_devices(arrays)
    out = tensors[0]._backend.stack(arrays, axis=dim)
    return record(out, tuple(tensors), "StackBackward0", _stack_bw, None, (dim, len(tensors)))




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


# ---- shapes and joins ------------------------------------------------------------------------
@op(method="broadcast_to", function="broadcast_to")
def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    """A view of input broadcast to shape.

    Args:
        input (Tensor): the input tensor.
        shape (tuple of ints): the shape to broadcast to.

    Example::

        >>> rustgrad.tensor([1, 2]).broadcast_to((2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return input.expand(tuple(shape))


@op(function="hstack")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined column-wise (along dim 1, or 0 for 1-D tensors)."""
    ts = [t.reshape(1) if t.dim() == 0 else t for t in tensors]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


@op(function="vstack")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined row-wise (1-D tensors become rows)."""
    ts = []
    for t in tensors:
        if t.dim() == 0:
            t = t.reshape(1, 1)
        elif t.dim() == 1:
            t = t.unsqueeze(0)
        ts.append(t)
    return cat(ts, 0)


# ---- pixel_shuffle, pixel_unshuffle -----------------------------------------------------------
def _shuffle_array(d: Any, r: int, up: bool) -> Any:
    """(*, C*r*r, H, W) -> (*, C, H*r, W*r) when up, and the inverse when not (a copy)."""
    lead = d.shape[:-3]
    c, h, w = d.shape[-3:]
    k = len(lead)
    if up:
        oc = c // (r * r)
        x = d.reshape(lead + (oc, r, r, h, w))
        x = x.transpose(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
        return x.reshape(lead + (oc, h * r, w * r)).copy()
    oh, ow = h // r, w // r
    x = d.reshape(lead + (c, oh, r, ow, r))
    x = x.transpose(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return x.reshape(lead + (c * r * r, oh, ow)).copy()


def _pixel_shuffle_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return pixel_unshuffle(g, ctx)


def _pixel_unshuffle_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return pixel_shuffle(g, ctx)


@op(function="pixel_shuffle", functional="pixel_shuffle", grad_fn="PixelShuffleBackward0")
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r): channel blocks become spatial blocks."""
    d = input._data
    r = upscale_factor
    if d.ndim < 3:
        raise RuntimeError("pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {d.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    if d.shape[-3] % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={d.shape[-3]} "
                           f"is not divisible by {r * r}")
    return record(_shuffle_array(d, r, True), (input,), "PixelShuffleBackward0",
                  _pixel_shuffle_bw, None, r)


@op(function="pixel_unshuffle", functional="pixel_unshuffle", grad_fn="PixelUnshuffleBackward0")
def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W): the inverse of pixel_shuffle."""
    d = input._data
    r = downscale_factor
    if d.ndim < 3:
        raise RuntimeError("pixel_unshuffle expects input to have at least 3 dimensions, but got "
                           f"input with {d.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    for name, k in (("height", -2), ("width", -1)):
        if d.shape[k] % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({k})={d.shape[k]} is not "
                               f"divisible by {r}")
    return record(_shuffle_array(d, r, False), (input,), "PixelUnshuffleBackward0",
                  _pixel_unshuffle_bw, None, r)
