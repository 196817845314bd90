"""Copies and conversions: clone, contiguous, `to` and the dtype/device casts, `copy_`, `fill_`, `zero_`, and the
`new_*` factories (fresh tensors with this tensor's dtype and device)."""

from __future__ import annotations

import builtins
from typing import Any, Tuple

from .. import _core, _creation, _dtype
from .._backends import device as _device
from .._backends import namespace, resolve
from .._tensor import Tensor
from ._declare import op
from ._util import (
    cast_grad,
    check_inplace,
    check_internal_overlap,
    check_no_partial_overlap,
    checked_int,
    is_grad_enabled,
    record,
    same_elements,
    sum_to,
)
from .arith import _broadcast_shape
from .copyslices import commit


def _clone_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


@op(method="clone", function="clone", grad_fn="CloneBackward0")
def clone(input: Tensor, *, memory_format: Any = None) -> Tensor:
    """A copy of input with its own storage; differentiable (CloneBackward0)."""
    return record(input._data.copy(), (input,), "CloneBackward0", _clone_bw)


@op(method="contiguous", grad_fn="CloneBackward0")
def contiguous(input: Tensor, memory_format: Any = None) -> Tensor:
    """input if it is C-contiguous, else a contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return record(input._backend.ascontiguousarray(input._data), (input,), "CloneBackward0", _clone_bw)


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


def _to_device_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return to_device(g, ctx)


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
    return record(arr, (t,), "ToCopyBackward0", _to_device_bw, None, t.device)


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


@op(method="type")
def type(self: Tensor, dtype: Any = None, non_blocking: Any = False) -> Any:  # noqa: A001
    """torch's Tensor.type(): the legacy type name, or a cast to a dtype or such a name."""
    if dtype is None:
        return "torch." + _dtype.LEGACY_NAMES[self.dtype.name]
    if isinstance(dtype, str):
        by_name = {"torch." + v: k for k, v in _dtype.LEGACY_NAMES.items()}
        if dtype not in by_name:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = _dtype.BY_NAME[by_name[dtype]]
    return self if dtype is self.dtype else to(self, dtype)


# ---- zero_, fill_, copy_: torch's ZeroBackward0, FillBackward2/3, CopyBackwards ----------------
def _overwrite_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    """The old value is overwritten: its history gets zeros (torch sends zeros, not None)."""
    return g.new_zeros(g.shape)


def _fill_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g.new_zeros(g.shape), cast_grad(g.sum(), ctx)


def _copy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    src_shape, src_dtype = ctx
    return g.new_zeros(g.shape), cast_grad(sum_to(g, src_shape), src_dtype)


def _overwrite(self: Tensor, data: Any, inputs: tuple, name: str, bw: Any, ctx: Any) -> Tensor:
    """Writes `data` (self's new values) into self with the history of node `name`; on a view,
    the base's history becomes CopySlices and the view's AsStridedBackward0, as torch's."""
    out = record(data, inputs, name, bw, None, ctx)
    if self._base is not None:
        commit(self, out)
    else:
        self._data[...] = data
        _core.rebase_history(self, out)
    return self


@op(method="zero_", grad_fn="ZeroBackward0")
def zero_(self: Tensor) -> Tensor:
    """Fills self with zeros, in place."""
    return _fill(self, 0, "ZeroBackward0")


@op(method="fill_", grad_fn=("FillBackward2", "FillBackward3"))
def fill_(self: Tensor, value: Any) -> Tensor:
    """Fills self with a number or a 0-d tensor's value, in place."""
    return _fill(self, value, "FillBackward2")


def _fill(self: Tensor, value: Any, name: str) -> Tensor:
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
            return _overwrite(self, data, (self, value), "FillBackward3", _fill_tensor_bw,
                              value._data.dtype)
        data[...] = value
        return _overwrite(self, data, (self,), name, _overwrite_bw, None)
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
        return _overwrite(self, data, (self, src), "torch::autograd::CopyBackwards", _copy_bw,
                          (src._data.shape, src._data.dtype))
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


