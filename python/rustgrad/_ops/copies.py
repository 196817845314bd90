"""Copies and conversions: clone, contiguous, `to` and the dtype/device casts, `copy_`, `fill_`, `zero_`, the
`new_*` factories (fresh tensors with this tensor's dtype and device), and the copies that rearrange
their input: tril/triu (and tril_/triu_), flip/fliplr/flipud, roll, rot90, repeat, tile,
repeat_interleave, pixel_shuffle/pixel_unshuffle; fill_diagonal_, nonzero_static; and factories:
empty_strided, new_empty_strided, empty_permuted, range, logspace, asarray, can_cast,
unravel_index, frombuffer and the window functions."""

from __future__ import annotations

import builtins
import collections.abc as _abc
import warnings
from typing import Any, Sequence, Tuple

from .. import _core, _creation, _dtype, _size
from .._backends import device as _device
from .._backends import namespace, resolve
from .._size import _wrap_dim
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
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
from .copyslices import commit, inplace_from
from .views import _shape_arg, flatten


def _clone_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


CLONE = node("CloneBackward0", _clone_bw, forward=ELEMENTWISE)


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


# the tangent as it is: forward AD casts and moves it as the output
TO_COPY = node("ToCopyBackward0", _to_copy_bw, forward=lambda tangents, saved, device: tangents[0])


def to_dtype(a: Tensor, dtype: _dtype.dtype, copy: bool = False) -> Tensor:
    d = a._data
    if d.dtype == dtype.np and not copy:
        return a
    if d.dtype.kind == "c" and not dtype.is_complex:
        warnings.warn("Casting complex values to real discards the imaginary part", UserWarning,
                      stacklevel=3)
        d = d.real  # NumPy's cast would warn again (ComplexWarning)
    out = d.astype(dtype.np)
    if not (dtype.is_floating_point or dtype.is_complex):
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


@op(method="byte")
def byte(self: Tensor) -> Tensor:
    """self.to(torch.uint8)."""
    return to_dtype(self, _dtype.uint8)


@op(method="char")
def char(self: Tensor) -> Tensor:
    """self.to(torch.int8)."""
    return to_dtype(self, _dtype.int8)


@op(method="short")
def short(self: Tensor) -> Tensor:
    """self.to(torch.int16)."""
    return to_dtype(self, _dtype.int16)


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


# torch's deprecated out-of-place resize: a view of the same number of entries, differentiated by
# its Python Function `Resize` (so the node reads ResizeBackward)
def _resize_bw(g: Tensor, saved: Any, shape: Any) -> Any:
    return g.reshape(shape)


RESIZE = node("ResizeBackward", _resize_bw)


@op(method="resize", grad_fn="ResizeBackward")
def resize(self: Tensor, *sizes: Any) -> Tensor:
    """A view of self with another shape of the same number of entries (deprecated in torch,
    with its warning; use reshape or view).

    Example::

        >>> rustgrad.arange(6.).resize(2, 3).shape
        torch.Size([2, 3])
    """
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, tuple(_shape_arg(sizes)))


@op(method="resize_as", grad_fn="ResizeBackward")
def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """resize to tensor's shape (deprecated in torch, with its warning)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_view(self, tuple(tensor._data.shape))


def _resize_view(self: Tensor, shape: Tuple[builtins.int, ...]) -> Tensor:
    d = self._data
    numel = 1
    for n in shape:
        numel *= n
    if numel != d.size:
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, shape))} ({numel} elements in total), but "
            f"the given tensor has a size of {'x'.join(map(str, d.shape))} ({d.size} elements). "
            "autograd's resize can only change the shape of a given tensor, while preserving the "
            "number of elements.")
    flat = d if d.flags.c_contiguous else d.copy()
    return RESIZE.record(flat.reshape(shape), (self,), d.shape, self if flat is d else None)


@op(method="set_")
def set_(self: Tensor, source: Any = None, storage_offset: Any = 0, size: Any = None,
         stride: Any = None) -> Tensor:
    """Makes self share source's memory, shape and strides (in place: one write to self's
    version); with no source, self becomes empty.

    Args:
        source (Tensor, optional): the tensor whose memory self takes. A storage with an offset,
            size and stride is not supported (rustgrad's storages are read-only views).

    Example::

        >>> a, b = rustgrad.zeros(2), rustgrad.arange(3.)
        >>> a.set_(b).tolist(), a.is_set_to(b)
        ([0.0, 1.0, 2.0], True)
    """
    if self.requires_grad and self.is_leaf and _core.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if source is None:
        data = self._data.reshape(-1)[:0].copy()
    elif isinstance(source, Tensor):
        if source._data.dtype != self._data.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type "
                               f"{self.dtype}")
        if source.device != self.device:
            raise RuntimeError(f"Attempted to set the storage of a tensor on device "
                               f"\"{self.device}\" to a storage on different device "
                               f"\"{source.device}\".  This is no longer allowed; the devices "
                               "must match.")
        data = source._data
    else:
        raise TypeError("set_(): rustgrad supports a Tensor source (or none), not "
                        f"{builtins.type(source).__name__}")
    self._set_data(data, builtins.int(data.nbytes))
    self._bump_version()
    return self


@op(method="is_set_to")
def is_set_to(self: Tensor, tensor: Tensor) -> builtins.bool:
    """Whether self and tensor look at the same memory with the same shape and strides.

    Example::

        >>> x = rustgrad.arange(3.)
        >>> x.is_set_to(x), x.is_set_to(x.clone())
        (True, False)
    """
    a, b = self._data, tensor._data
    return (self.device == tensor.device and a.shape == b.shape and a.strides == b.strides
            and a.dtype == b.dtype and self._backend.data_ptr(a) == tensor._backend.data_ptr(b))


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


# ---- tril_, triu_, fill_diagonal_ -----------------------------------------------------------
@op(method="tril_", grad_fn="TrilBackward0")
def tril_(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
    """tril written into self: the entries above the diagonal set to zero, in place.

    Args:
        diagonal (int, optional): the diagonal kept last: above the main one when positive.
            Default: 0.

    Example::

        >>> rustgrad.ones(2, 2).tril_()
        tensor([[1., 0.],
                [1., 1.]])
    """
    return _triangle_inplace(self, tril, diagonal)


@op(method="triu_", grad_fn="TriuBackward0")
def triu_(self: Tensor, diagonal: builtins.int = 0) -> Tensor:
    """triu written into self: the entries below the diagonal set to zero, in place.

    Args:
        diagonal (int, optional): the diagonal kept first: above the main one when positive.
            Default: 0.

    Example::

        >>> rustgrad.ones(2, 2).triu_()
        tensor([[1., 1.],
                [0., 1.]])
    """
    return _triangle_inplace(self, triu, diagonal)


def _triangle_inplace(self: Tensor, triangle: Any, diagonal: builtins.int) -> Tensor:
    """tril_/triu_: the out-of-place op written into self, after its rank check."""
    if self._data.ndim < 2:
        raise RuntimeError(f"{triangle.__name__}: input tensor must have at least 2 dimensions")
    return inplace_from(self, lambda src: triangle(src, diagonal), False)


@op(method="fill_diagonal_", grad_fn=("torch::autograd::CopySlices", "FillBackward2"))
def fill_diagonal_(self: Tensor, fill_value: Any, wrap: builtins.bool = False) -> Tensor:
    """Fills the main diagonal of self (at least 2-D; all dims equal beyond 2-D) with
    fill_value, in place.

    Args:
        fill_value (number): the value written.
        wrap (bool, optional): for a tall matrix, start the diagonal again every N + 1 rows
            (N the number of columns), as NumPy's fill_diagonal. Default: False.

    The diagonal is written through a strided view of self, so with autograd self's history
    becomes CopySlices, as torch's.

    Example::

        >>> rustgrad.zeros(2, 3).fill_diagonal_(5)
        tensor([[5., 0., 0.],
                [0., 5., 0.]])
    """
    d = self._data
    n = d.ndim
    if n < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = d.shape[0], d.shape[1]
    if n > 2 and any(s != height for s in d.shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    strides = self.stride()
    step = builtins.sum(strides)
    size = builtins.min(height, width)
    offset = self.storage_offset()
    self.as_strided((size,), (step,), offset).fill_(fill_value)
    if wrap and n == 2 and height > width + 1:
        rest = (d.size + width) // (width + 1) - size
        self.as_strided((rest,), (step,), offset + strides[0] * (width + 1)).fill_(fill_value)
    return self


# ---- nonzero_static, new_empty_strided --------------------------------------------------------
@op(method="nonzero_static", function="nonzero_static")
def nonzero_static(input: Tensor, *, size: builtins.int, fill_value: builtins.int = -1) -> Tensor:
    """nonzero() with exactly size rows: cut to size, or padded with rows of fill_value.

    Args:
        size (int): keyword-only; the number of rows of the result.
        fill_value (int, optional): keyword-only; the padding rows' value. Default: -1.

    Example::

        >>> rustgrad.tensor([0, 3, 0, 4]).nonzero_static(size=3)
        tensor([[ 1],
                [ 3],
                [-1]])
    """
    if not isinstance(size, builtins.int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    d = input._data
    xp = input._backend
    i64 = _dtype.int64.np
    found = xp.stack(xp.nonzero(d), axis=1).astype(i64) if d.ndim else \
        xp.zeros((builtins.int(builtins.bool(d)), 0), dtype=i64)
    out = xp.full((size, d.ndim), fill_value, dtype=i64)
    keep = builtins.min(size, builtins.int(found.shape[0]))
    out[:keep] = found[:keep]
    return _const(out)


@op(method="new_empty_strided")
def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None,
                      device: Any = None, requires_grad: builtins.bool = False,
                      layout: Any = None, pin_memory: builtins.bool = False) -> Tensor:
    """An uninitialised tensor of the given shape and strides, with self's dtype and device
    (unless given).

    Args:
        size (tuple of ints): the shape.
        stride (tuple of ints): the strides, in elements.

    Example::

        >>> rustgrad.zeros(1, dtype=rustgrad.int32).new_empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    return _creation.empty_strided(size, stride, requires_grad=requires_grad,
                                   **_like_self(self, dtype, device))


# ---- factories: range, logspace, empty_permuted, asarray, can_cast, unravel_index ------------
def _check_out_dtype(out: Tensor, dtype: Any) -> None:
    if dtype is not None and dtype != out.dtype:
        raise RuntimeError(f"dtype {_dtype.scalar_type_name(dtype)} does not match dtype of out "
                           f"parameter ({_dtype.scalar_type_name(out.dtype)})")


def write_out(out: Tensor, result: Tensor, name: str, dtype: Any = None) -> Tensor:
    """Ends a function's `out=` form: result's values written into out (resized to its shape
    when they differ), as torch's out= overloads; they record no autograd."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                        f"{builtins.type(out).__name__}")
    _check_out_dtype(out, dtype)
    if is_grad_enabled() and (out.requires_grad or result.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if tuple(out._data.shape) != tuple(result._data.shape):
        resize_(out, tuple(result._data.shape))
    out._data[...] = result._data.astype(out._data.dtype) if out.device == result.device \
        else to_device(result, out.device)._data.astype(out._data.dtype)
    out._bump_version()
    return out


_RANGE_DEPRECATED = (
    "torch.range is deprecated and will be removed in a future release because its behavior is "
    "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values "
    "in [start, end).")


@op(function="range")
def inclusive_range(start: Any, end: Any, step: Any = 1, *, out: Any = None, dtype: Any = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: builtins.bool = False) -> Tensor:
    """torch.range (deprecated, warns): values from start to end *included*, step apart, in the
    default dtype unless given. Use arange, whose end is excluded.

    Args:
        start (Number): the first value.
        end (Number): the last value (included when the steps reach it).
        step (Number, optional): the gap between values, not zero. Default: 1.
        out (Tensor, optional): keyword-only; the tensor written (resized).
        dtype (rustgrad.dtype, optional): keyword-only; the element type (an integer one
            truncates start, end and step first). Default: out's, else the default dtype.
        layout: keyword-only; accepted for torch's signature (strided).
        device (optional): keyword-only; where to allocate. Default: the default device.
        requires_grad (bool, optional): keyword-only; whether the result requires grad.
            Default: False.

    Example::

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     rustgrad.range(1, 4)
        tensor([1., 2., 3., 4.])
    """
    warnings.warn(_RANGE_DEPRECATED, UserWarning, stacklevel=2)
    if out is not None:
        _check_out_dtype(out, dtype)
        dtype, device = out.dtype, out.device
    result = _creation.inclusive_range(start, end, step, dtype=dtype, device=device,
                                       requires_grad=requires_grad)
    return result if out is None else write_out(out, result, "range")


@op(function="logspace")
def logspace(start: Any, end: Any, steps: builtins.int, base: builtins.float = 10.0, *,
             out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
             requires_grad: builtins.bool = False) -> Tensor:
    """steps values base ** x, x evenly spaced from start to end (both included).

    Args:
        start (Number or 0-d Tensor): the first exponent.
        end (Number or 0-d Tensor): the last exponent.
        steps (int): how many values (non-negative).
        base (float, optional): the base. Default: 10.
        out (Tensor, optional): keyword-only; the tensor written (resized).
        dtype (rustgrad.dtype, optional): keyword-only; the element type. Default: out's, else
            the default dtype.
        layout: keyword-only; accepted for torch's signature (strided).
        device (optional): keyword-only; where to allocate. Default: the default device.
        requires_grad (bool, optional): keyword-only; whether the result requires grad.
            Default: False.

    Example::

        >>> rustgrad.logspace(0, 2, 3)
        tensor([  1.,  10., 100.])
    """
    if out is not None:
        dtype, device = dtype or out.dtype, device or out.device
    result = _creation.logspace(start, end, steps, base, dtype=dtype, device=device,
                                requires_grad=requires_grad)
    return result if out is None else write_out(out, result, "logspace", dtype)


@op(function="empty_permuted")
def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, requires_grad: builtins.bool = False,
                   pin_memory: builtins.bool = False) -> Tensor:
    """An uninitialised tensor of shape size laid out in memory with its dims in the order
    physical_layout (the first the outermost): a permutation of a contiguous tensor.

    Args:
        size (tuple of ints): the logical shape.
        physical_layout (tuple of ints): the dims from outermost to innermost in memory.
        dtype (rustgrad.dtype, optional): keyword-only; the element type. Default: the default
            dtype.
        layout: keyword-only; accepted for torch's signature (strided).
        device (optional): keyword-only; where to allocate. Default: the default device.
        requires_grad (bool, optional): keyword-only; whether the result requires grad.
            Default: False.
        pin_memory (bool, optional): keyword-only; accepted for torch's signature.

    Example::

        >>> rustgrad.empty_permuted((2, 3, 5), (0, 2, 1)).stride()
        (15, 1, 3)
    """
    return _creation.empty_permuted(size, physical_layout, dtype=dtype, device=device,
                                    requires_grad=requires_grad)


@op(function="asarray")
def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: Any = None,
            requires_grad: Any = None) -> Tensor:
    """obj as a tensor: a tensor, a NumPy array or an object of the buffer protocol shares
    its memory where dtype and device allow it (unless copy=True); numbers and sequences are
    copied.

    Args:
        obj: a tensor, NumPy array or scalar, buffer (bytes, bytearray, array.array), number or
            (nested) sequence.
        dtype (rustgrad.dtype, optional): keyword-only; the element type. Default: obj's
            (inferred as tensor() infers it for Python data).
        device (optional): keyword-only; the device. Default: obj's (the default device for
            Python data).
        copy (bool, optional): keyword-only; True always copies, False refuses to (a
            ValueError where sharing is impossible), None copies only when needed.
            Default: None.
        requires_grad (bool, optional): keyword-only; whether the result requires grad: True
            or False set it (on obj itself when obj is returned: a leaf's flag changes, a
            non-leaf gives a detached alias). Default: None, a tensor's own (torch warns once
            when that is True), else False.

    Example::

        >>> import numpy as np
        >>> a = np.zeros(3)
        >>> t = rustgrad.asarray(a)
        >>> a[0] = 1
        >>> t
        tensor([1., 0., 0.], dtype=torch.float64)
    """
    return _creation.asarray(obj, dtype=dtype, device=device, copy=copy,
                             requires_grad=requires_grad)


@op(function="can_cast")
def can_cast(from_: Any, to: Any) -> builtins.bool:
    """Whether type promotion allows a value of dtype from_ to be cast to dtype to (no float to
    integer, no complex to real, nothing but bool to bool).

    Args:
        from_ (rustgrad.dtype): the original dtype.
        to (rustgrad.dtype): the target dtype.

    Example::

        >>> rustgrad.can_cast(rustgrad.int32, rustgrad.float32)
        True
        >>> rustgrad.can_cast(rustgrad.float32, rustgrad.int32)
        False
    """
    for name, position, d in (("from_", 1, from_), ("to", 2, to)):
        if not isinstance(d, _dtype.dtype):
            raise TypeError(f"can_cast(): argument '{name}' (position {position}) must be "
                            f"torch.dtype, not {builtins.type(d).__name__}")
    if from_.is_complex and not to.is_complex:
        return False
    if from_.is_floating_point and not (to.is_floating_point or to.is_complex):
        return False
    return not (from_ is not _dtype.bool_ and to is _dtype.bool_)


@op(function="unravel_index", grad_fn="UnbindBackward0")
def unravel_index(indices: Tensor, shape: Any) -> Tuple[Tensor, ...]:
    """The coordinates, in a tensor of the given shape, of flat (row-major) indices: one int64
    tensor per dim, each of indices' shape. Indices wrap around modulo the number of
    elements.

    Args:
        indices (Tensor): an integer tensor of flat indices.
        shape (int or sequence of ints): the shape indexed.

    Example::

        >>> rustgrad.unravel_index(rustgrad.tensor([4, 1]), (2, 3))
        (tensor([1, 0]), tensor([1, 1]))
    """
    if not isinstance(indices, Tensor):
        raise AttributeError(f"'{builtins.type(indices).__name__}' object has no attribute "
                             "'is_complex'")
    if indices.is_floating_point() or indices.dtype.is_complex or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, builtins.int) and not isinstance(shape, builtins.bool):
        dims: Tuple[builtins.int, ...] = (shape,)
    elif isinstance(shape, _abc.Sequence):
        for s in shape:
            if not isinstance(s, builtins.int):
                raise TypeError(f"expected 'shape' sequence to only contain ints, but got "
                                f"{builtins.type(s)}")
        dims = builtins.tuple(shape)
    else:
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got "
                        f"{builtins.type(shape)}")
    if any(s < 0 for s in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {dims}")
    d = indices._data
    if not all(s > 0 for s in dims) and d.size:
        raise ValueError(f"'shape' cannot have zero dimensions when 'indices' is non-empty, but "
                         f"got {dims}")
    xp = indices._backend
    i64 = _dtype.int64.np
    coefs = [1] * len(dims)
    for k in builtins.range(len(dims) - 2, -1, -1):
        coefs[k] = coefs[k + 1] * dims[k + 1]
    flat = d.astype(i64)[..., None]
    out = xp.floor_divide(flat, xp.asarray(coefs, dtype=i64)) % xp.asarray(dims, dtype=i64) \
        if dims else xp.zeros(d.shape + (0,), dtype=i64)
    return _const(out).unbind(-1)
