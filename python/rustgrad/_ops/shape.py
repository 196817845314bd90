"""View and shape ops: reshape/view, transpose/t, permute, (un)squeeze, expand, flatten,
cat, stack, clone, contiguous, to(dtype). Views share storage and version counter."""

from __future__ import annotations

from typing import Any, Sequence

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ._declare import op
from ._util import record, sum_to


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
def view(a: Tensor, *shape: Any) -> Tensor:
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        raise NotImplementedError("view(dtype) is not supported")
    d = a._data
    shape = _infer(_shape_arg(shape), d.size)
    v = _try_view(d, shape)
    if v is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    return record(v, (a,), "ViewBackward0", _reshape_bw, None, d.shape, False, a)


@op(method="reshape", function="reshape", grad_fn=("UnsafeViewBackward0", "ViewBackward0"))
def reshape(a: Tensor, *shape: Any) -> Tensor:
    d = a._data
    shape = _infer(_shape_arg(shape), d.size)
    v = _try_view(d, shape)
    if v is not None:
        return record(v, (a,), "ViewBackward0", _reshape_bw, None, d.shape, False, a)
    return record(d.reshape(shape), (a,), "UnsafeViewBackward0", _reshape_bw, None, d.shape)


@op(method="flatten", function="flatten")
def flatten(a: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    d = a._data
    if d.ndim == 0:
        return reshape(a, 1)
    s = _wrap_dim(start_dim, d.ndim)
    e = _wrap_dim(end_dim, d.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return a
    n = 1
    for x in d.shape[s : e + 1]:
        n *= x
    return reshape(a, d.shape[:s] + (n,) + d.shape[e + 1 :])


@op(method="unflatten")
def unflatten(a: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    d = a._data
    dim = _wrap_dim(dim, d.ndim)
    return view(a, d.shape[:dim] + tuple(sizes) + d.shape[dim + 1 :])


def _transpose_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.transpose(*ctx)


@op(method="transpose", function="transpose", grad_fn="TransposeBackward0")
def transpose(a: Tensor, dim0: int, dim1: int) -> Tensor:
    d = a._data
    d0, d1 = _wrap_dim(dim0, d.ndim), _wrap_dim(dim1, d.ndim)
    out = a._backend.swapaxes(d, d0, d1) if d.ndim else d.view()
    return record(out, (a,), "TransposeBackward0", _transpose_bw, None, (d0, d1), False, a)


def _t_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.t()


@op(method="t", function="t", grad_fn="TBackward0")
def t(a: Tensor) -> Tensor:
    d = a._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return record(d.T, (a,), "TBackward0", _t_bw, None, None, False, a)


def _permute_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.permute(ctx)


@op(method="permute", function="permute", grad_fn="PermuteBackward0")
def permute(a: Tensor, *dims: Any) -> Tensor:
    d = a._data
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
    return record(d.transpose(dims), (a,), "PermuteBackward0", _permute_bw, None,
                  tuple(inverse), False, a)


def _unsqueeze_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.squeeze(ctx)


@op(method="unsqueeze", function="unsqueeze", grad_fn="UnsqueezeBackward0")
def unsqueeze(a: Tensor, dim: int) -> Tensor:
    d = a._data
    dim = _wrap_dim(dim, d.ndim + 1)
    out = d.reshape(d.shape[:dim] + (1,) + d.shape[dim:])
    return record(out, (a,), "UnsqueezeBackward0", _unsqueeze_bw, None, dim, False, a)


@op(
    method="squeeze",
    function="squeeze",
    grad_fn=("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"),
)
def squeeze(a: Tensor, dim: Any = None) -> Tensor:
    d = a._data
    if dim is None:
        shape = tuple(s for s in d.shape if s != 1)
        name = "SqueezeBackward0"
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        dims = {_wrap_dim(x, d.ndim) for x in dims} if d.ndim else set()
        shape = tuple(s for i, s in enumerate(d.shape) if not (i in dims and s == 1))
        name = "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"
    return record(d.reshape(shape), (a,), name, _reshape_bw, None, d.shape, False, a)


def _expand_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return sum_to(g, ctx)


@op(method="expand", grad_fn="ExpandBackward0")
def expand(a: Tensor, *sizes: Any) -> Tensor:
    d = a._data
    sizes = _shape_arg(sizes)
    if len(sizes) < d.ndim:
        raise RuntimeError(
            f"expand(torch.{_dtype.LEGACY_NAMES[a.dtype.name]}{{{list(d.shape)}}}, "
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
    out = a._backend.broadcast_to(d, tuple(shape))
    return record(out, (a,), "ExpandBackward0", _expand_bw, None, d.shape, False, a)


@op(method="expand_as")
def expand_as(a: Tensor, other: Tensor) -> Tensor:
    return expand(a, other._data.shape)


def _clone_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


@op(method="clone", function="clone", grad_fn="CloneBackward0")
def clone(a: Tensor, *, memory_format: Any = None) -> Tensor:
    return record(a._data.copy(), (a,), "CloneBackward0", _clone_bw)


@op(method="contiguous", grad_fn="CloneBackward0")
def contiguous(a: Tensor, memory_format: Any = None) -> Tensor:
    if a._data.flags.c_contiguous:
        return a
    return record(a._backend.ascontiguousarray(a._data), (a,), "CloneBackward0", _clone_bw)


def _to_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.to(ctx)


def to_dtype(a: Tensor, dtype: _dtype.dtype, copy: bool = False) -> Tensor:
    d = a._data
    if d.dtype == dtype.np and not copy:
        return a
    out = d.astype(dtype.np)
    if not dtype.is_floating_point:
        return record(out, (), "", None)
    return record(out, (a,), "ToCopyBackward0", _to_bw, None, _dtype.from_np(d.dtype))


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
    rt = _dtype.result_type(*[t for t in tensors]) if len({t._data.dtype for t in tensors}) > 1 \
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
    """The dimensions reversed (permute), as torch's `.T` for every ndim."""
    if input._data.ndim not in (0, 2) and not _WARNED_T:
        import warnings

        _WARNED_T.append(True)
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return permute(input, tuple(reversed(range(input._data.ndim))))


# ---- shapes and joins ------------------------------------------------------------------------
@op(method="broadcast_to", function="broadcast_to")
def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    return input.expand(tuple(size))


@op(function="hstack")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    from .. import cat

    ts = [t.reshape(1) if t.dim() == 0 else t for t in tensors]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


@op(function="vstack")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    from .. import cat

    ts = []
    for t in tensors:
        if t.dim() == 0:
            t = t.reshape(1, 1)
        elif t.dim() == 1:
            t = t.unsqueeze(0)
        ts.append(t)
    return cat(ts, 0)
