"""Joins: tensors put together into one new tensor (a copy). cat/concat/concatenate, stack,
hstack/vstack/row_stack/column_stack/dstack, block_diag, cartesian_prod and combinations; and
bilinear, two inputs joined through a weight (torch's _trilinear)."""

from __future__ import annotations

import itertools
from typing import Any, Sequence

from .. import _creation, _dtype
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import const as _const
from ._util import opmath, same_devices
from .linalg import einsum
from .meshgrid import meshgrid
from .views import atleast_1d, atleast_2d, atleast_3d, reshape


# ctx: (dim, each input's size along dim); the engine casts each piece to its input's dtype
def _cat_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, sizes = ctx
    out = []
    start = 0
    lead = (slice(None),) * dim
    for n in sizes:
        if n is None:  # a skipped legacy empty 1-D input: torch gives it zeros({0})
            out.append(g[lead + (slice(0, 0),)].reshape(0))
            continue
        out.append(g[lead + (slice(start, start + n),)])
        start += n
    return tuple(out)


def _cat_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    # an input without a tangent contributes zeros of its size
    dim, sizes = ctx
    # a skipped legacy empty 1-D input's tangent says nothing of the others' shape
    ref = next((t for t, n in zip(tangents, sizes) if t is not None and n is not None), None)
    if ref is None:
        return None
    pieces = []
    for t, n in zip(tangents, sizes):
        if n is None:
            continue
        if t is None:
            shape = list(ref.shape)
            shape[dim] = n
            t = _creation.zeros(shape, dtype=ref.dtype, device=ref.device)
        pieces.append(t)
    return cat(pieces, dim)


CAT = node("CatBackward0", _cat_bw, forward=_cat_fw)


@op(function=("cat", "concat", "concatenate"), grad_fn="CatBackward0", autocast=dict(cpu="promote"))
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
    datas = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        datas.append(t._data)
    # torch skips legacy empty 1-D tensors of shape (0,)
    used = [d for d in datas if not (d.ndim == 1 and d.shape[0] == 0)]
    ref = used[0] if used else datas[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    dim = _wrap_dim(dim, ref.ndim)
    dt = ref.dtype
    same = all(d.dtype == dt for d in datas)
    rt = dt if same else _dtype.result_type(*tensors).np
    r = ref.shape
    for i, d in enumerate(used):
        s = d.shape
        if s == r:
            continue
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
    xp = tensors[0]._backend
    arrays = (used if same else [d.astype(rt, copy=False) for d in used]) or [ref]
    same_devices(arrays)
    out = xp.concatenate(arrays, axis=dim)
    sizes = tuple(None if (d.ndim == 1 and d.shape[0] == 0 and used) else d.shape[dim]
                  for d in datas)
    return CAT.record(out, tuple(tensors), (dim, sizes))


concat = concatenate = cat


def _stack_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    dim, n = ctx
    lead = (slice(None),) * dim
    return tuple(g[lead + (i,)] for i in range(n))


def _stack_fw(tangents: Any, saved: Any, ctx: Any) -> Any:
    ref = next(t for t in tangents if t is not None)
    return stack([_creation.zeros_like(ref) if t is None else t for t in tangents], ctx[0])


STACK = node("StackBackward0", _stack_bw, forward=_stack_fw)


@op(function="stack", grad_fn="StackBackward0", autocast=dict(cpu="promote"))
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
    return STACK.record(out, tuple(tensors), (dim, len(tensors)))


def _non_empty(tensors: Sequence[Tensor], name: str) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@op(function="hstack", grad_fn="CatBackward0")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined column-wise: along dim 1, or dim 0 when they are 1-D (0-d ones count
    as 1-D).

    Args:
        tensors (sequence of Tensors): the tensors to join.

    Example::

        >>> rustgrad.hstack([rustgrad.tensor([1, 2]), rustgrad.tensor([3])])
        tensor([1, 2, 3])
    """
    ts = atleast_1d(_non_empty(tensors, "hstack"))
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


@op(function=("vstack", "row_stack"), grad_fn="CatBackward0")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined row-wise, along dim 0 (1-D tensors become rows); `row_stack` too.

    Args:
        tensors (sequence of Tensors): the tensors to join.

    Example::

        >>> rustgrad.vstack([rustgrad.tensor([1, 2]), rustgrad.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    return cat(atleast_2d(_non_empty(tensors, "vstack")), 0)


row_stack = vstack


@op(function="column_stack", grad_fn="CatBackward0")
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined as columns: 0-d and 1-D tensors become columns, then hstack.

    Args:
        tensors (sequence of Tensors): the tensors to join.

    Example::

        >>> rustgrad.column_stack([rustgrad.tensor([1, 2]), rustgrad.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    ts = _non_empty(tensors, "column_stack")
    return hstack([reshape(t, t._data.size, 1) if t._data.ndim <= 1 else t for t in ts])


@op(function="dstack", grad_fn="CatBackward0")
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """The tensors joined depth-wise, along dim 2, after atleast_3d.

    Args:
        tensors (sequence of Tensors): the tensors to join.

    Example::

        >>> rustgrad.dstack([rustgrad.tensor([1, 2]), rustgrad.tensor([3, 4])])
        tensor([[[1, 3],
                 [2, 4]]])
    """
    return cat(atleast_3d(_non_empty(tensors, "dstack")), 2)


# ---- block_diag ------------------------------------------------------------------------------
# ctx: per input, (first row, first column, rows, columns, its shape)
def _block_diag_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return tuple(g[r:r + h, c:c + w].reshape(shape) for r, c, h, w, shape in ctx)


BLOCK_DIAG = node("BlockDiagBackward0", _block_diag_bw)


@op(function="block_diag", grad_fn="BlockDiagBackward0")
def block_diag(*tensors: Tensor) -> Tensor:
    """A block diagonal matrix of the tensors (a 0-d tensor is a 1x1 block, a 1-D one a row).

    Args:
        tensors (Tensors): the blocks, at most 2-D each; the result has their promoted dtype.

    Example::

        >>> rustgrad.block_diag(rustgrad.tensor([[1, 2]]), rustgrad.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    for i, t in enumerate(tensors):
        if t._data.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t._data.ndim} dimensions")
    if not tensors:
        return _creation.zeros(1, 0)  # torch's result for no blocks
    rt = _dtype.result_type(*tensors).np if len({t._data.dtype for t in tensors}) > 1 \
        else tensors[0]._data.dtype
    arrays = [t._data for t in tensors]
    same_devices(arrays)
    blocks = [d.reshape((1,) * (2 - d.ndim) + d.shape) for d in arrays]
    rows = sum(b.shape[0] for b in blocks)
    cols = sum(b.shape[1] for b in blocks)
    out = tensors[0]._backend.zeros((rows, cols), dtype=rt)
    ctx = []
    r = c = 0
    for b, d in zip(blocks, arrays):
        h, w = b.shape
        out[r:r + h, c:c + w] = b
        ctx.append((r, c, h, w, d.shape))
        r, c = r + h, c + w
    return BLOCK_DIAG.record(out, tuple(tensors), tuple(ctx))


# ---- cartesian_prod, combinations ------------------------------------------------------------
def _check_vector(t: Tensor) -> None:
    if t._data.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t._data.shape)}")


@op(function="cartesian_prod", grad_fn="StackBackward0")
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every tuple of one entry from each 1-D tensor, as the rows of a matrix (in order, the
    last tensor varying fastest); one tensor comes back as it is.

    Args:
        tensors (Tensors): 1-D tensors of one dtype.

    Example::

        >>> rustgrad.cartesian_prod(rustgrad.tensor([1, 2]), rustgrad.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    for t in tensors:
        _check_vector(t)
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if len({t._data.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


@op(function="combinations", grad_fn="IndexBackward0")
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Every r-element combination of a 1-D tensor's entries (Python's itertools order), as the
    rows of a matrix.

    Args:
        input (Tensor): a 1-D tensor.
        r (int, optional): the number of entries per combination. Default: 2.
        with_replacement (bool, optional): whether an entry may repeat within one. Default:
            False.

    Example::

        >>> rustgrad.combinations(rustgrad.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    _check_vector(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    xp = input._backend
    if r == 0:
        return _const(xp.zeros((0,), dtype=input._data.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = [i for combo in pick(range(input._data.shape[0]), r) for i in combo]
    index = xp.asarray(rows, dtype=_dtype.int64.np).reshape(len(rows) // r, r)
    return input[_const(index)]


# ---- bilinear: two inputs joined through a weight (torch's _trilinear) ----------------------------
def _trilinear_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x1, w, x2 = saved.i1, saved.i2, saved.i3
    return (einsum("nk,kij,nj->ni", g, w, x2), einsum("nk,ni,nj->kij", g, x1, x2),
            einsum("nk,kij,ni->nj", g, w, x1))


TRILINEAR = node("TrilinearBackward0", _trilinear_bw, saved=("i1", "i2", "i3"))


@op(function="bilinear", grad_fn=("TrilinearBackward0", "ViewBackward0", "AddBackward0"),
    autocast=dict(cuda="promote"))
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Any = None) -> Tensor:
    """The bilinear map ``y[..., k] = input1[..., :] @ weight[k] @ input2[..., :] + bias[k]``
    (nn.functional.bilinear).

    Args:
        input1 (Tensor): (*, in1_features).
        input2 (Tensor): (*, in2_features), the same leading dims as input1.
        weight (Tensor): (out_features, in1_features, in2_features).
        bias (Tensor, optional): (out_features,).

    Example::

        >>> w = rustgrad.ones(2, 3, 4)
        >>> rustgrad.bilinear(rustgrad.ones(5, 3), rustgrad.ones(5, 4), w).shape
        torch.Size([5, 2])
    """
    a, b, w = input1._data, input2._data, weight._data
    named = [("input1", input1), ("input2", input2), ("weight", weight)]
    if bias is not None:
        named.append(("bias", bias))
    if any(t.dtype != input1.dtype for _, t in named):
        names = ", ".join(f"{n}: {_dtype.cpp_name(t.dtype)}" for n, t in named)
        raise RuntimeError(f"All tensors must have the same dtype, got {names}")
    if a.ndim != b.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {a.ndim} and "
                           f"{b.ndim}")
    for i in range(a.ndim - 1):
        if a.shape[i] != b.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{a.shape[i]} and {b.shape[i]}")
    if a.shape[-1] != w.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{a.shape[-1]} but expected {w.shape[1]}")
    if b.shape[-1] != w.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{b.shape[-1]} but expected {w.shape[2]}")
    if bias is not None and bias._data.shape[0] != w.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias._data.shape[0]} but expected {w.shape[0]}")
    same_devices([a, b, w])
    x1 = reshape(input1, -1, a.shape[-1])
    x2 = reshape(input2, -1, b.shape[-1])
    xp = input1._backend
    out = xp.einsum("ni,kij,nj->nk", opmath(x1._data), opmath(w), opmath(x2._data))
    out = xp.asarray(out).astype(a.dtype)
    y = TRILINEAR.record(out, (x1, weight, x2), i1=x1, i2=weight, i3=x2)
    y = y.view(a.shape[:-1] + (w.shape[0],))
    return y if bias is None else y + bias
