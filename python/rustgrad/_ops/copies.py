"""Copies and conversions: clone, contiguous, `to` and the dtype/device casts, `copy_`, `fill_`, `zero_`, the
`new_*` factories (fresh tensors with this tensor's dtype and device), and the copies that rearrange
their input: tril/triu, flip/fliplr/flipud, roll, rot90, repeat, tile, repeat_interleave,
pixel_shuffle/pixel_unshuffle."""

from __future__ import annotations

import builtins
from typing import Any, Sequence, Tuple

from .. import _core, _creation, _dtype, _size
from .._backends import device as _device
from .._backends import namespace, resolve
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    check_inplace,
    check_internal_overlap,
    check_no_partial_overlap,
    checked_int,
    is_grad_enabled,
    record,
    same_elements,
)
from ._util import const as _const
from .arith import _broadcast_shape
from .copyslices import commit
from .views import flatten


def _clone_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


CLONE = node("CloneBackward0", _clone_bw)


@op(method="clone", function="clone", grad_fn="CloneBackward0")
def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of input with its own storage; differentiable (CloneBackward0)."""
    return CLONE.record(input._data.copy(), (input,))


@op(method="contiguous", grad_fn="CloneBackward0")
def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    """input if it is C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return CLONE.record(input._backend.ascontiguousarray(input._data), (input,))


# ToCopyBackward0: the gradient goes back to the input's device (ctx, for a move between
# devices; None for a cast, whose gradient the engine casts back to the input's dtype).
def _to_copy_bw(g: Tensor, saved: Any, device: Any) -> Any:
    return g if device is None else to_device(g, device)


TO_COPY = node("ToCopyBackward0", _to_copy_bw)


def to_dtype(a: Tensor, dtype: _dtype.dtype, copy: bool = False) -> Tensor:
    d = a._data
    if d.dtype == dtype.np and not copy:
        return a
    out = d.astype(dtype.np)
    if not dtype.is_floating_point:
        return record(out, (), "", None)
    return TO_COPY.record(out, (a,))


def to_device(t: Tensor, target: Any) -> Tensor:
    """t copied to another device (differentiable: the gradient moves back): between two GPUs
    device to device, else through host memory."""
    src = t._backend
    dst = namespace(target)
    if src.DEVICE_TYPE != "cpu" and src.DEVICE_TYPE == dst.DEVICE_TYPE:
        arr = src.copy_to(t._data, target)
    else:
        host = src.to_numpy(t._data)
        arr = dst.from_numpy(host.copy() if dst is src else host, target)
    return TO_COPY.record(arr, (t,), t.device)


def parse_to(*args: Any, **kwargs: Any) -> Tuple[Any, Any, bool]:
    """(device, dtype, copy) from the call forms of Tensor.to and Module.to: to(dtype),
    to(device), to(other), to(device, dtype), and the keywords."""
    dtype = kwargs.get("dtype")
    dev = kwargs.get("device")
    flags = []  # positional non_blocking, copy (after the device, dtype or tensor)
    for a in args:
        if a is True or a is False:
            flags.append(a)
        elif isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif a is not None:
            dev = a
    copy = flags[1] if len(flags) > 1 else kwargs.get("copy", False)
    return dev, dtype, builtins.bool(copy)  # bool here is Tensor.bool


@op(method="to", grad_fn="ToCopyBackward0")
def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Tensor.to(dtype), to(device), to(other), to(device, dtype); copy=False returns self if
    nothing changes."""
    dev, dtype, copy = parse_to(*args, **kwargs)
    out = self
    if dev is not None:
        target = resolve(dev)  # "cuda" is the current GPU: to("cuda") of a tensor there is itself
        if target != out.device:
            out = to_device(out, target)
    if dtype is not None:
        out = to_dtype(out, dtype, copy and out is self)
    elif copy and out is self:
        out = clone(self)
    return out


@op(method="float", grad_fn="ToCopyBackward0")
def float(self: Tensor) -> Tensor:  # noqa: A001  (torch's method name)
    """self.to(torch.float32)."""
    return to_dtype(self, _dtype.float32)


@op(method="double", grad_fn="ToCopyBackward0")
def double(self: Tensor) -> Tensor:
    """self.to(torch.float64)."""
    return to_dtype(self, _dtype.float64)


@op(method="half", grad_fn="ToCopyBackward0")
def half(self: Tensor) -> Tensor:
    """self.to(torch.float16)."""
    return to_dtype(self, _dtype.float16)


@op(method="long")
def long(self: Tensor) -> Tensor:
    """self.to(torch.int64)."""
    return to_dtype(self, _dtype.int64)


@op(method="int")
def int(self: Tensor) -> Tensor:  # noqa: A001  (torch's method name)
    """self.to(torch.int32)."""
    return to_dtype(self, _dtype.int32)


@op(method="bool")
def bool(self: Tensor) -> Tensor:  # noqa: A001  (torch's method name)
    """self.to(torch.bool)."""
    return to_dtype(self, _dtype.bool_)


@op(method="bfloat16", grad_fn="ToCopyBackward0")
def bfloat16(self: Tensor) -> Tensor:
    """self.to(torch.bfloat16) (stored as ml_dtypes' bfloat16, on the CPU)."""
    return to_dtype(self, _dtype.bfloat16)


@op(method="type_as")
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """self cast to other's dtype."""
    return to_dtype(self, other.dtype)


@op(method="cpu")
def cpu(self: Tensor, memory_format: Any = None) -> Tensor:
    """This tensor on the CPU (self if it is there already)."""
    return to(self, "cpu")


@op(method="cuda")
def cuda(self: Tensor, device: Any = None, non_blocking: Any = False,
         memory_format: Any = None) -> Tensor:
    """This tensor on a CUDA device (the current one by default; an int is an index)."""
    target = _device("cuda") if device is None else _device(device)
    if target.type != "cuda":
        raise RuntimeError("Invalid device, must be cuda device")
    return to(self, target)


def _legacy_type(name: str) -> Tuple[Any, Any]:
    """(dtype, device type or None) of a legacy type name: 'torch.FloatTensor',
    'torch.cuda.LongTensor'."""
    device = None
    if name.startswith("torch.cuda."):
        device, rest = "cuda", name[len("torch.cuda."):]
    elif name.startswith("torch."):
        rest = name[len("torch."):]
    else:
        raise ValueError(f"invalid type: '{name}'")
    by_name = {v: k for k, v in _dtype.LEGACY_NAMES.items()}
    if rest not in by_name:
        raise ValueError(f"invalid type: '{name}'")
    return _dtype.BY_NAME[by_name[rest]], device


@op(method="type")
def type(self: Tensor, dtype: Any = None, non_blocking: Any = False, **kwargs: Any) -> Any:  # noqa: A001
    """The legacy type name of self, or self cast to a dtype or a legacy tensor type.

    Args:
        dtype (dtype, str or type, optional): a dtype, a legacy name ('torch.FloatTensor',
            'torch.cuda.LongTensor') or a legacy type (rustgrad.FloatTensor); None returns the
            name of self's type.
        non_blocking (bool, optional): accepted for torch's signature.

    self itself is returned when nothing changes.

    Example::

        >>> x = rustgrad.tensor([1, 2])
        >>> x.type()
        'torch.LongTensor'
        >>> x.type(rustgrad.FloatTensor)
        tensor([1., 2.])
        >>> x.type('torch.DoubleTensor')
        tensor([1., 2.], dtype=torch.float64)
    """
    if dtype is None:
        prefix = "torch.cuda." if self.device.type == "cuda" else "torch."
        return prefix + _dtype.LEGACY_NAMES[self.dtype.name]
    device = None
    if isinstance(dtype, str):
        dtype, device = _legacy_type(dtype)
    elif isinstance(dtype, builtins.type):
        # a legacy tensor type (rustgrad.FloatTensor) names its dtype; Tensor is the default one
        name = getattr(dtype, "_dtype_name", None)
        if name is not None:
            dtype = _dtype.BY_NAME[name]
        elif issubclass(dtype, Tensor):
            dtype = _dtype.get_default_dtype()
        else:
            raise ValueError(f"invalid type: '{dtype!r}'")
    out = self if device is None or self.device.type == device else to(self, device)
    return out if dtype is out.dtype else to(out, dtype)


# ---- new, is_same_size, is_nonzero, resize_ ------------------------------------------------
@op(method="new")
def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """torch's legacy constructor with self's dtype and device.

    Args:
        *args: nothing (an empty tensor), sizes (an uninitialised tensor of that shape, as ints
            or one Size), a sequence of data (a copy in self's dtype) or a tensor of self's
            dtype (an alias of it).
        device (optional): keyword-only; the device of the new tensor. Default: self's.

    Prefer new_empty, new_tensor and their siblings, which take dtype= as well.

    Example::

        >>> x = rustgrad.tensor([1, 2], dtype=rustgrad.int32)
        >>> x.new(2, 3).shape
        torch.Size([2, 3])
        >>> x.new([1.5, 2.5])
        tensor([1, 2], dtype=torch.int32)
    """
    dt = self.dtype
    device = self.device if device is None else device
    if not args:
        return _creation.empty(0, dtype=dt, device=device)
    if all(isinstance(a, builtins.int) and not isinstance(a, builtins.bool) for a in args) or (
            len(args) == 1 and isinstance(args[0], _size.Size)):
        return _creation.empty(*args, dtype=dt, device=device)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype is not dt:
                raise TypeError(f"expected {dt} (got {data.dtype})")
            return data[...]  # torch's alias of the tensor (AliasBackward0)
        if isinstance(data, (builtins.bool, builtins.int, builtins.float, complex)):
            raise TypeError(f"new(): data must be a sequence (got {builtins.type(data).__name__})")
        return _creation.tensor(data, dtype=dt, device=device)
    raise TypeError(f"new() received an invalid combination of arguments - got {args!r}")


@op(method="is_same_size")
def is_same_size(self: Tensor, other: Tensor) -> builtins.bool:
    """Whether self and other have the same shape.

    Example::

        >>> rustgrad.zeros(2, 3).is_same_size(rustgrad.ones(2, 3))
        True
    """
    return tuple(self._data.shape) == tuple(other._data.shape)


@op(method="is_nonzero")
def is_nonzero(self: Tensor) -> builtins.bool:
    """Whether the one value of a one-element tensor is not zero (an error for any other).

    Example::

        >>> rustgrad.tensor([0.5]).is_nonzero()
        True
    """
    n = self._data.size
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(self._backend.to_numpy(self._data).reshape(()) != 0)


@op(method="resize_")
def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Gives self a new shape in place, keeping its first entries (new ones are uninitialised).

    Args:
        *sizes (ints, or one sequence of ints): the new shape.
        memory_format (optional): keyword-only; accepted for torch's signature (the result is
            contiguous).

    A tensor that requires grad cannot be resized. Shrinking (or keeping) the number of
    entries reuses self's memory from its first entry; growing past its storage moves self to
    new memory (its views then no longer see its writes, where torch's do).

    Example::

        >>> x = rustgrad.arange(6.)
        >>> x.resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = _creation._size(sizes)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{builtins.min(shape)}: {list(shape)}")
    self._check_inplace_mode()
    d = self._data
    xp = self._backend
    n = 1
    for k in shape:
        n *= k
    if tuple(shape) != tuple(d.shape):
        storage = self.untyped_storage()
        low, nbytes = storage.data_ptr(), storage.nbytes()
        item = builtins.int(d.itemsize)
        start = builtins.int(xp.data_ptr(d)) - low if d.size else 0
        room = (nbytes - start) // item if d.size else 0
        if d.flags.c_contiguous and n <= room and d.size:
            # the first n entries of the storage from self's first element, as a view of it
            flat = xp.as_strided(d, (room,), (item,))
            self._set_data(flat[:n].reshape(shape), builtins.int(self._storage_nbytes()))
        else:
            out = xp.empty(shape, dtype=d.dtype)
            keep = builtins.min(n, builtins.int(d.size))
            if keep:
                out.reshape(-1)[:keep] = d.reshape(-1)[:keep]
            self._set_data(out, builtins.int(out.nbytes))
    self._bump_version()
    return self


@op(method="resize_as_")
def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """resize_ to the_template's shape.

    Example::

        >>> rustgrad.arange(6.).resize_as_(rustgrad.zeros(3)).shape
        torch.Size([3])
    """
    return resize_(self, tuple(the_template._data.shape), memory_format=memory_format)


# ---- zero_, fill_, copy_: torch's ZeroBackward0, FillBackward2/3, CopyBackwards ----------------
def _overwrite_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    """The old value is overwritten: its history gets zeros (torch sends zeros, not None)."""
    return g.new_zeros(g.shape)


ZERO = node("ZeroBackward0", _overwrite_bw)
FILL = node("FillBackward2", _overwrite_bw)


def _fill_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.new_zeros(g.shape), g.sum()


FILL_TENSOR = node("FillBackward3", _fill_tensor_bw)


# the source's gradient is g, summed to its shape and cast to its dtype by the engine
def _copy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.new_zeros(g.shape), g


COPY = node("torch::autograd::CopyBackwards", _copy_bw)


def _overwrite(self: Tensor, data: Any, inputs: tuple, spec: Any) -> Tensor:
    """Writes `data` (self's new values) into self with the history of node `spec`; on a view,
    the base's history becomes CopySlices and the view's AsStridedBackward0, as torch's."""
    out = spec.record(data, inputs)
    if self._base is not None:
        commit(self, out)
    else:
        self._data[...] = data
        _core.rebase_history(self, out)
    return self


@op(method="zero_", grad_fn="ZeroBackward0")
def zero_(self: Tensor) -> Tensor:
    """Fills self with zeros, in place."""
    return _fill(self, 0, ZERO)


@op(method="fill_", grad_fn=("FillBackward2", "FillBackward3"))
def fill_(self: Tensor, value: Any) -> Tensor:
    """Fills self with a number or a 0-d tensor's value, in place."""
    return _fill(self, value, FILL)


def _fill(self: Tensor, value: Any, spec: Any) -> Tensor:
    check_inplace(self)
    value_t = isinstance(value, Tensor)
    if not value_t:
        value = checked_int(self._data.dtype, value)
    if value_t and value._data.ndim != 0:
        raise RuntimeError(
            "fill_ only supports 0-dimension value tensor but got tensor with "
            f"{value._data.ndim} dimensions."
        )
    if is_grad_enabled() and (self.requires_grad or (value_t and value.requires_grad)):
        data = self._data.copy()
        if value_t:
            data[...] = value._data
            return _overwrite(self, data, (self, value), FILL_TENSOR)
        data[...] = value
        return _overwrite(self, data, (self,), spec)
    self._data[...] = value._data if value_t else value
    self._bump_version()
    return self


@op(method="copy_", grad_fn="torch::autograd::CopyBackwards")
def copy_(self: Tensor, src: Any, non_blocking: Any = False) -> Tensor:
    """Copies src's values (broadcast, cast, moved across devices) into self, in place."""
    check_inplace(self)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {src.__class__.__name__}")
    # torch returns at once when src is self's own elements (even in an expanded self): the
    # version still moves, and with autograd the node is still recorded
    same = same_elements(self._data, src._data, self._backend)
    if not same:
        check_internal_overlap(self)
        check_no_partial_overlap(self, src)
    if src.device != self.device:
        src = to_device(src, self.device)
    try:
        shape_ok = _broadcast_shape(self._data.shape, src._data.shape) == self._data.shape
    except RuntimeError:
        shape_ok = False
    if not shape_ok:
        raise RuntimeError(
            f"The size of tensor a ({self._data.shape[-1] if self._data.ndim else 1}) must match "
            f"the size of tensor b ({src._data.shape[-1] if src._data.ndim else 1}) at "
            "non-singleton dimension"
        )
    if is_grad_enabled() and (self.requires_grad or src.requires_grad):
        data = self._data.copy()
        data[...] = src._data
        return _overwrite(self, data, (self, src), COPY)
    if not same:
        self._data[...] = src._data
    self._bump_version()
    return self


# ---- new_* factories: torch's defaults are this tensor's dtype and device ---------------------
def _like_self(self: Tensor, dtype: Any, device: Any) -> dict:
    return {"dtype": dtype or self.dtype, "device": device or self.device}


@op(method="new_zeros")
def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: Any = False) -> Tensor:
    """A tensor of zeros with self's dtype and device (unless given)."""
    return _creation.zeros(*size, requires_grad=requires_grad, **_like_self(self, dtype, device))


@op(method="new_ones")
def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: Any = False) -> Tensor:
    """A tensor of ones with self's dtype and device (unless given)."""
    return _creation.ones(*size, requires_grad=requires_grad, **_like_self(self, dtype, device))


@op(method="new_empty")
def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: Any = False) -> Tensor:
    """An uninitialised tensor with self's dtype and device (unless given)."""
    return _creation.empty(*size, requires_grad=requires_grad, **_like_self(self, dtype, device))


@op(method="new_full")
def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None,
             device: Any = None, requires_grad: Any = False) -> Tensor:
    """A tensor filled with fill_value, with self's dtype and device (unless given)."""
    return _creation.full(size, fill_value, requires_grad=requires_grad,
                          **_like_self(self, dtype, device))


@op(method="new_tensor")
def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: Any = False) -> Tensor:
    """A copy of data as a tensor with self's dtype and device (unless given)."""
    return _creation.tensor(data, requires_grad=requires_grad, **_like_self(self, dtype, device))


def _int_list(args: Any) -> Tuple[builtins.int, ...]:
    """Varargs or one sequence of ints, as torch's IntArrayRef arguments."""
    if len(args) == 1 and not isinstance(args[0], builtins.int):
        args = args[0]
    if isinstance(args, builtins.int):
        return (args,)
    return tuple(builtins.int(a) for a in args)


# ---- rearranging copies: tril / triu, flip, roll, rot90 -----------------------------------------------------------
def _tril_bw(g: Tensor, saved: Any, diagonal: Any) -> Any:
    return tril(g, diagonal)


TRIL = node("TrilBackward0", _tril_bw)


def _triu_bw(g: Tensor, saved: Any, diagonal: Any) -> Any:
    return triu(g, diagonal)


TRIU = node("TriuBackward0", _triu_bw)


def _tri(input: Tensor, k: builtins.int, upper: builtins.bool) -> Tensor:
    d = input._data
    name = "triu" if upper else "tril"
    if d.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    xp = input._backend
    out = xp.triu(d, k) if upper else xp.tril(d, k)
    return (TRIU if upper else TRIL).record(out, (input,), k)


@op(method="tril", function="tril", grad_fn="TrilBackward0")
def tril(input: Tensor, diagonal: builtins.int = 0) -> Tensor:
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
def triu(input: Tensor, diagonal: builtins.int = 0) -> Tensor:
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


def _flip_bw(g: Tensor, saved: Any, dims: Any) -> Any:
    return flip(g, dims)


FLIP = node("FlipBackward0", _flip_bw)


@op(method="flip", function="flip", grad_fn="FlipBackward0")
def flip(input: Tensor, *dims: Any) -> Tensor:
    """A copy of input reversed along the given dims.

    Args:
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
    return FLIP.record(out, (input,), wd)


def _roll_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shifts, dims = ctx
    return roll(g, tuple(-s for s in shifts), dims)


ROLL = node("RollBackward0", _roll_bw)


@op(method="roll", function="roll", grad_fn="RollBackward0")
def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """A copy of input rolled by shifts along dims (the flattened input when dims is None).

    Args:
        shifts (int or tuple of ints): by how many places; entries pushed off one end come back
            at the other.
        dims (int or tuple of ints, optional): the dims to roll along.

    Example::

        >>> rustgrad.tensor([1, 2, 3, 4]).roll(1)
        tensor([4, 1, 2, 3])
    """
    d = input._data
    sh = (shifts,) if isinstance(shifts, builtins.int) else tuple(builtins.int(s) for s in shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        out = input._backend.roll(d, sh[0]) if d.size else d.copy()
        return ROLL.record(out, (input,), (sh, None))
    dm = (dims,) if isinstance(dims, builtins.int) else tuple(builtins.int(x) for x in dims)
    if len(sh) != len(dm):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(dm)}")
    wd = tuple(_wrap_dim(x, d.ndim) for x in dm)
    if d.ndim == 0 or d.size == 0:
        out = d.copy()
    else:
        out = input._backend.roll(d, sh, axis=wd)
    return ROLL.record(out, (input,), (sh, dm))


@op(method="fliplr", function="fliplr", grad_fn="FlipBackward0")
def fliplr(input: Tensor) -> Tensor:
    """A copy of input reversed left to right (along dim 1); it must be at least 2-D.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).fliplr()
        tensor([[2, 1],
                [4, 3]])
    """
    return _flip_one(input, 1)


@op(method="flipud", function="flipud", grad_fn="FlipBackward0")
def flipud(input: Tensor) -> Tensor:
    """A copy of input reversed up to down (along dim 0); it must be at least 1-D.

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).flipud()
        tensor([[3, 4],
                [1, 2]])
    """
    return _flip_one(input, 0)


def _flip_one(input: Tensor, dim: int) -> Tensor:
    """flip along one dim, refused (as torch's fliplr/flipud) when input lacks it."""
    if input._data.ndim <= dim:
        raise RuntimeError(f"Input must be >= {dim + 1}-d.")
    return flip(input, dim)


def _rot90_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    k, dims = ctx
    return rot90(g, -k, dims)


ROT90 = node("Rot90Backward0", _rot90_bw)


@op(method="rot90", function="rot90", grad_fn="Rot90Backward0")
def rot90(input: Tensor, k: builtins.int = 1, dims: Sequence[builtins.int] = (0, 1)) -> Tensor:
    """A copy of input rotated by k quarter turns in the plane of dims, from the first dim
    towards the second.

    Args:
        input (Tensor): the input tensor (at least 2-D).
        k (int, optional): the number of quarter turns (negative turns the other way).
            Default: 1.
        dims (sequence of two ints, optional): the plane. Default: (0, 1).

    Example::

        >>> rustgrad.tensor([[1, 2], [3, 4]]).rot90()
        tensor([[2, 4],
                [1, 3]])
    """
    dims = [builtins.int(x) for x in dims]
    d = input._data
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if d.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {d.ndim}")
    d0, d1 = _wrap_dim(dims[0], d.ndim), _wrap_dim(dims[1], d.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    xp = input._backend
    turns = k % 4
    # as torch's: a quarter turn is a flip then a transpose, so its result has swapped strides
    if turns == 1:
        out = xp.swapaxes(xp.flip(d, axis=d1).copy(), d0, d1)
    elif turns == 2:
        out = xp.flip(d, axis=(d0, d1)).copy()
    elif turns == 3:
        out = xp.swapaxes(xp.flip(d, axis=d0).copy(), d0, d1)
    else:
        out = d.copy()
    return ROT90.record(out, (input,), (k, (d0, d1)))


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


REPEAT = node("RepeatBackward0", _repeat_bw)


@op(method="repeat", grad_fn="RepeatBackward0")
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """input tiled sizes times along each dimension.

    Args:
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
    return REPEAT.record(out, (input,), (d.shape, sizes))


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
            counts = xp.full((n,), builtins.int(rd.reshape(-1)[0]), dtype=_dtype.int64.np)
        elif rd.size == n:
            counts = rd.reshape(-1)
        else:
            raise RuntimeError(
                "repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{rd.size} and input.size({dim}) = {n}"
            )
        if counts.size and builtins.bool((counts < 0).any()):
            raise RuntimeError("repeats can not be negative")
        index = xp.repeat(xp.arange(n, dtype=_dtype.int64.np), counts)
        return x.index_select(dim, _const(index))
    r = builtins.int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(x._data.shape)
    shape.insert(dim + 1, r)
    return flatten(x.unsqueeze(dim + 1).expand(tuple(shape)).clone(), dim, dim + 1)


# ---- pixel_shuffle, pixel_unshuffle -----------------------------------------------------------
def _shuffle_array(d: Any, r: builtins.int, up: builtins.bool) -> Any:
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


def _pixel_shuffle_bw(g: Tensor, saved: Any, factor: Any) -> Any:
    return pixel_unshuffle(g, factor)


PIXEL_SHUFFLE = node("PixelShuffleBackward0", _pixel_shuffle_bw)


def _pixel_unshuffle_bw(g: Tensor, saved: Any, factor: Any) -> Any:
    return pixel_shuffle(g, factor)


PIXEL_UNSHUFFLE = node("PixelUnshuffleBackward0", _pixel_unshuffle_bw)


@op(function="pixel_shuffle", functional="pixel_shuffle", grad_fn="PixelShuffleBackward0")
def pixel_shuffle(input: Tensor, upscale_factor: builtins.int) -> Tensor:
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
    return PIXEL_SHUFFLE.record(_shuffle_array(d, r, True), (input,), r)


@op(function="pixel_unshuffle", functional="pixel_unshuffle", grad_fn="PixelUnshuffleBackward0")
def pixel_unshuffle(input: Tensor, downscale_factor: builtins.int) -> Tensor:
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
    return PIXEL_UNSHUFFLE.record(_shuffle_array(d, r, False), (input,), r)


# ---- factories: empty_strided, frombuffer, the window functions (made in _creation) -----------
@op(function="empty_strided")
def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: builtins.bool = False,
                  pin_memory: builtins.bool = False) -> Tensor:
    """An uninitialised tensor of the given shape and strides (in elements).

    Args:
        size (tuple of ints): the shape.
        stride (tuple of ints): the step between neighbours along each dim, in elements.
        dtype (rustgrad.dtype, optional): keyword-only; the element type. Default: the default
            dtype.
        layout: keyword-only; accepted for torch's signature (strided).
        device (optional): keyword-only; where to allocate. Default: the default device.
        requires_grad (bool, optional): keyword-only; whether the result requires grad.
            Default: False.
        pin_memory (bool, optional): keyword-only; accepted for torch's signature.

    Example::

        >>> rustgrad.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    return _creation.empty_strided(size, stride, dtype=dtype, device=device,
                                   requires_grad=requires_grad)


@op(function="frombuffer")
def frombuffer(buffer: Any, *, dtype: Any, count: builtins.int = -1, offset: builtins.int = 0,
               requires_grad: builtins.bool = False) -> Tensor:
    """A 1-D CPU tensor that shares the memory of a buffer (bytes, bytearray, array.array...).

    Args:
        buffer: an object of Python's buffer protocol.
        dtype (rustgrad.dtype): keyword-only; the element type the bytes are read as.
        count (int, optional): keyword-only; how many elements to read; -1 reads to the end.
            Default: -1.
        offset (int, optional): keyword-only; the bytes skipped at the start. Default: 0.
        requires_grad (bool, optional): keyword-only; whether the result requires grad.
            Default: False.

    Writes through the tensor reach the buffer (a read-only buffer gives a read-only tensor).

    Example::

        >>> import array
        >>> a = array.array("f", [1., 2., 3.])
        >>> rustgrad.frombuffer(a, dtype=rustgrad.float32, count=2, offset=4)
        tensor([2., 3.])
    """
    return _creation.frombuffer(buffer, dtype=dtype, count=count, offset=offset,
                                requires_grad=requires_grad)




@op(function="hann_window")
def hann_window(window_length: builtins.int, periodic: builtins.bool = True, *, dtype: Any = None,
                layout: Any = None, device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """The Hann window: 0.5 - 0.5 cos(2 pi n / (N - 1)) for n = 0 .. window_length - 1.

    Args:
        window_length (int): the number of samples.
        periodic (bool, optional): True gives the first window_length samples of a window one
            longer (for spectral analysis); False a symmetric window. Default: True.
        dtype, layout, device, requires_grad: see empty_strided.

    Example::

        >>> rustgrad.hann_window(4, periodic=False, dtype=rustgrad.float64)
        tensor([0.0000, 0.7500, 0.7500, 0.0000], dtype=torch.float64)
    """
    return _creation.window("hann", window_length, periodic, dtype, device, requires_grad)


@op(function="hamming_window", args_like=hann_window)
def hamming_window(window_length: builtins.int, periodic: builtins.bool = True,
                   alpha: builtins.float = 0.54, beta: builtins.float = 0.46, *,
                   dtype: Any = None, layout: Any = None, device: Any = None,
                   requires_grad: builtins.bool = False) -> Tensor:
    """The Hamming window: alpha - beta cos(2 pi n / (N - 1)) for n = 0 .. window_length - 1.

    Args:
        alpha (float, optional): the constant term. Default: 0.54.
        beta (float, optional): the cosine's weight. Default: 0.46.

    Example::

        >>> rustgrad.hamming_window(3, periodic=False)
        tensor([0.0800, 1.0000, 0.0800])
    """
    return _creation.window("hamming", window_length, periodic, dtype, device, requires_grad,
                            (alpha, beta))


@op(function="blackman_window", args_like=hann_window)
def blackman_window(window_length: builtins.int, periodic: builtins.bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: builtins.bool = False) -> Tensor:
    """The Blackman window: 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)).

    Example::

        >>> rustgrad.blackman_window(3, periodic=False, dtype=rustgrad.float64)
        tensor([-1.3878e-17,  1.0000e+00, -1.3878e-17], dtype=torch.float64)
    """
    return _creation.window("blackman", window_length, periodic, dtype, device, requires_grad)


@op(function="bartlett_window", args_like=hann_window)
def bartlett_window(window_length: builtins.int, periodic: builtins.bool = True, *, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: builtins.bool = False) -> Tensor:
    """The Bartlett (triangular) window: 1 - |2n / (N - 1) - 1|.

    Example::

        >>> rustgrad.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _creation.window("bartlett", window_length, periodic, dtype, device, requires_grad)


@op(function="kaiser_window", args_like=hann_window)
def kaiser_window(window_length: builtins.int, periodic: builtins.bool = True,
                  beta: builtins.float = 12.0, *, dtype: Any = None, layout: Any = None,
                  device: Any = None, requires_grad: builtins.bool = False) -> Tensor:
    """The Kaiser window: I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta).

    Args:
        beta (float, optional): the shape parameter (larger is narrower). Default: 12.

    Example::

        >>> rustgrad.kaiser_window(3, False, 0.0)
        tensor([1., 1., 1.])
    """
    return _creation.window("kaiser", window_length, periodic, dtype, device, requires_grad,
                            (beta,))
