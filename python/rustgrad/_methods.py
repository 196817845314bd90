"""Binds the ops to Tensor as methods and operators (kept apart so the op modules can import
Tensor without a cycle)."""

from __future__ import annotations

from typing import Any

from . import _dtype
from ._ops import arith, indexing, linalg, reduce, select, shape, unary
from ._tensor import Tensor

T = Tensor

# operators (assigned directly: no extra Python frame on the hot path)
T.__add__ = arith.add
T.__radd__ = arith.radd
T.__iadd__ = arith.add_
T.__sub__ = arith.sub
T.__rsub__ = arith.rsub
T.__isub__ = arith.sub_
T.__mul__ = arith.mul
T.__rmul__ = arith.mul
T.__imul__ = arith.mul_
T.__truediv__ = arith.div
T.__rtruediv__ = arith.rdiv
T.__itruediv__ = arith.div_
T.__floordiv__ = arith.floordiv
T.__rfloordiv__ = arith.rfloordiv
T.__mod__ = arith.remainder
T.__pow__ = arith.pow
T.__rpow__ = arith.rpow
T.__ipow__ = arith.pow_
T.__neg__ = arith.neg
T.__pos__ = arith.pos
T.__abs__ = unary.abs
T.__matmul__ = linalg.matmul
T.__rmatmul__ = linalg.rmatmul
T.__eq__ = select.eq  # type: ignore[assignment]
T.__ne__ = select.ne  # type: ignore[assignment]
T.__lt__ = select.lt
T.__le__ = select.le
T.__gt__ = select.gt
T.__ge__ = select.ge
T.__and__ = select.and_
T.__rand__ = select.and_
T.__or__ = select.or_
T.__ror__ = select.or_
T.__xor__ = select.xor
T.__invert__ = select.invert
T.__getitem__ = indexing.getitem
T.__setitem__ = indexing.setitem
T.__hash__ = Tensor.__hash__  # __eq__ above would otherwise unset it

# methods
T.add, T.add_, T.sub, T.sub_ = arith.add, arith.add_, arith.sub, arith.sub_
T.mul, T.mul_, T.div, T.div_ = arith.mul, arith.mul_, arith.div, arith.div_
T.multiply, T.divide, T.subtract = arith.mul, arith.div, arith.sub
T.true_divide, T.neg, T.negative = arith.div, arith.neg, arith.neg
T.pow, T.pow_ = arith.pow, arith.pow_
T.remainder = arith.remainder
T.exp, T.log, T.sqrt, T.abs = unary.exp, unary.log, unary.sqrt, unary.abs
T.relu, T.sigmoid, T.tanh = unary.relu, unary.sigmoid, unary.tanh
T.clamp, T.clip, T.clamp_, T.clip_ = unary.clamp, unary.clamp, unary.clamp_, unary.clamp_
T.sign, T.reciprocal = unary.sign, unary.reciprocal
T.sum, T.mean, T.max, T.min = reduce.sum, reduce.mean, reduce.max, reduce.min
T.matmul, T.mm = linalg.matmul, linalg.matmul
T.reshape, T.view = shape.reshape, shape.view
T.flatten, T.unflatten = shape.flatten, shape.unflatten
T.transpose, T.t, T.permute = shape.transpose, shape.t, shape.permute
T.unsqueeze, T.squeeze = shape.unsqueeze, shape.squeeze
T.expand, T.expand_as = shape.expand, shape.expand_as
T.clone, T.contiguous = shape.clone, shape.contiguous
T.eq, T.ne, T.lt = select.eq, select.ne, select.lt
T.le, T.gt, T.ge = select.le, select.gt, select.ge
T.maximum, T.minimum = select.maximum, select.minimum
T.where = lambda self, condition, other: select.where(condition, self, other)


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    return shape.view(self, other._data.shape)


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    return shape.reshape(self, other._data.shape)


T.view_as, T.reshape_as = _view_as, _reshape_as


_WARNED_T: list = []  # torch warns once per process


@property  # type: ignore[misc]
def _T(self: Tensor) -> Tensor:
    # torch's .T is permute(reversed dims) for every ndim (PermuteBackward0)
    if self._data.ndim not in (0, 2) and not _WARNED_T:
        import warnings

        _WARNED_T.append(True)
        warnings.warn(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
            "deprecated and it will throw an error in a future release. Consider `x.mT` to "
            "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
            "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return shape.permute(self, tuple(reversed(range(self._data.ndim))))


T.T = _T


def _to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """to(dtype), to(device), to(other), to(device, dtype); copy=False returns self if nothing
    changes."""
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    for a in args:
        if isinstance(a, _dtype.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a.dtype, a.device
        elif a is not None:
            dev = a
    out = self
    if dev is not None:
        from ._backends import device as _device

        target = _device(dev) if not isinstance(dev, _device) else dev
        if target != out.device:
            from ._devices import to_device

            out = to_device(out, target)
    if dtype is not None:
        out = shape.to_dtype(out, dtype, copy and out is self)
    elif copy and out is self:
        out = shape.clone(self)
    return out


T.to = _to
T.float = lambda self: shape.to_dtype(self, _dtype.float32)
T.double = lambda self: shape.to_dtype(self, _dtype.float64)
T.half = lambda self: shape.to_dtype(self, _dtype.float16)
T.long = lambda self: shape.to_dtype(self, _dtype.int64)
T.int = lambda self: shape.to_dtype(self, _dtype.int32)
T.bool = lambda self: shape.to_dtype(self, _dtype.bool_)
T.type_as = lambda self, other: shape.to_dtype(self, other.dtype)
T.cpu = lambda self: _to(self, "cpu")
T.cuda = lambda self, device=None: _to(self, "cuda" if device is None else device)


# ---- zero_, fill_, copy_: torch's ZeroBackward0, FillBackward2/3, CopyBackwards ----------------
def _zeros_for(g: Tensor) -> Tensor:
    from ._creation import zeros_like

    return zeros_like(g)


def _overwrite_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    """The old value is overwritten: its history gets zeros (torch sends zeros, not None)."""
    return _zeros_for(g)


def _fill_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from ._ops._util import cast_grad

    return _zeros_for(g), cast_grad(g.sum(), ctx)


def _copy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from ._ops._util import cast_grad, sum_to

    src_shape, src_dtype = ctx
    return _zeros_for(g), cast_grad(sum_to(g, src_shape), src_dtype)


def _overwrite(self: Tensor, data: Any, inputs: tuple, name: str, bw: Any, ctx: Any) -> Tensor:
    """Writes `data` (self's new values) into self with the history of node `name`; on a view,
    the base's history becomes CopySlices and the view's AsStridedBackward0, as torch's."""
    from . import _core
    from ._ops._util import record

    out = record(data, inputs, name, bw, None, ctx)
    if self._base is not None:
        from ._ops.copyslices import commit

        commit(self, out)
    else:
        self._data[...] = data
        _core.rebase_history(self, out)
    return self


def _zero_(self: Tensor) -> Tensor:
    return _fill_(self, 0, _name="ZeroBackward0")


def _fill_(self: Tensor, value: Any, *, _name: str = "FillBackward2") -> Tensor:
    from ._ops._util import check_inplace, is_grad_enabled

    check_inplace(self)
    value_t = isinstance(value, Tensor)
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
        return _overwrite(self, data, (self,), _name, _overwrite_bw, None)
    self._data[...] = value._data if value_t else value
    self._bump_version()
    return self


def _copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    from ._ops._util import check_inplace, is_grad_enabled

    check_inplace(self)
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.device != self.device:
        from ._devices import to_device

        src = to_device(src, self.device)
    try:
        shape_ok = arith._broadcast_shape(self._data.shape, src._data.shape) == self._data.shape
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
    self._data[...] = src._data
    self._bump_version()
    return self


T.zero_, T.fill_, T.copy_ = _zero_, _fill_, _copy_


def _bfloat16(self: Tensor) -> Tensor:
    raise TypeError(
        "rustgrad: bfloat16 is not available: the NumPy and CuPy backends have no bfloat16 "
        "arrays; use half() (float16) or float() instead"
    )


T.bfloat16 = _bfloat16
