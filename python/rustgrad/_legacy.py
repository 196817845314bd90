"""Names from torch's Variable era that old tutorials still use: `autograd.Variable` and the
typed constructors (`FloatTensor([1, 2])`, `LongTensor(2, 3)`), with torch's isinstance."""

from __future__ import annotations

import warnings
from typing import Any, Tuple

from . import _creation, _dtype
from ._size import Size
from ._tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: `Variable(t, requires_grad)` is a detached alias of t with that flag."""

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Any:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                          "instead.", UserWarning, stacklevel=2)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_(requires_grad)


class _TypedMeta(type):
    _dtype_name = ""

    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor) and other.dtype.name == cls._dtype_name

    def __call__(cls, *args: Any, device: Any = None) -> Any:
        dt = _dtype.from_np(__import__("numpy").dtype(cls._dtype_name))
        return _new(dt, args, device, typed=True)


def _new(dt: _dtype.dtype, args: Tuple[Any, ...], device: Any, typed: bool) -> Tensor:
    """torch's legacy `new(...)`: no argument is an empty tensor, ints or a Size are sizes
    (uninitialised), a tensor is aliased, anything else is data converted to dt."""
    if not args:
        return _creation.empty(0, dtype=dt, device=device)
    if (len(args) == 1 and isinstance(args[0], Size)) or all(
            isinstance(a, int) and not isinstance(a, bool) for a in args):
        return _creation.empty(*args, dtype=dt, device=device)
    if len(args) == 1:
        data = args[0]
        if isinstance(data, Tensor):
            if typed and data.dtype != dt:
                raise TypeError(f"expected {dt} (got {data.dtype})")
            return data.detach()
        if isinstance(data, (bool, int, float, complex)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return _creation.tensor(data, dtype=dt, device=device)
    raise TypeError(f"new() received an invalid combination of arguments - got {args!r}")


def legacy_new(*args: Any, device: Any = None, **kwargs: Any) -> Tensor:
    """`Tensor(...)` called by a user: torch's legacy constructor in the default dtype (the
    binding's TensorBase makes the new tensor an alias of this one)."""
    if "data" in kwargs:
        args = (*args, kwargs.pop("data"))
    if kwargs:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"unexpected keyword arguments {sorted(kwargs)}")
    return _new(_dtype.get_default_dtype(), args, device, typed=False)


def _typed(name: str, dtype_name: str) -> type:
    doc = (f"Legacy constructor of {dtype_name} tensors, as torch's {name}: ``{name}(data)`` "
           f"copies data, ``{name}(*sizes)`` makes an uninitialized tensor, and "
           f"``isinstance(t, {name})`` tests a tensor's dtype. Prefer ``rustgrad.tensor(data, "
           f"dtype=rustgrad.{dtype_name})``.")
    return _TypedMeta(name, (), {"_dtype_name": dtype_name, "__module__": "torch", "__doc__": doc})


FloatTensor = _typed("FloatTensor", "float32")
DoubleTensor = _typed("DoubleTensor", "float64")
HalfTensor = _typed("HalfTensor", "float16")
LongTensor = _typed("LongTensor", "int64")
IntTensor = _typed("IntTensor", "int32")
ShortTensor = _typed("ShortTensor", "int16")
CharTensor = _typed("CharTensor", "int8")
ByteTensor = _typed("ByteTensor", "uint8")
BoolTensor = _typed("BoolTensor", "bool")
