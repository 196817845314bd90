"""Names from torch's Variable era that old tutorials still use: `autograd.Variable` and the
typed constructors (`FloatTensor([1, 2])`, `LongTensor(2, 3)`), with torch's isinstance."""

from __future__ import annotations

import warnings
from typing import Any

from . import _dtype
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
        from . import _creation

        dt = _dtype.from_np(__import__("numpy").dtype(cls._dtype_name))
        if not args:
            return _creation.empty(0, dtype=dt, device=device)
        if all(isinstance(a, int) for a in args):
            return _creation.empty(*args, dtype=dt, device=device)
        if len(args) == 1:
            return _creation.tensor(args[0], dtype=dt, device=device)
        raise TypeError(f"new() received an invalid combination of arguments - got {args!r}")


def _typed(name: str, dtype_name: str) -> type:
    return _TypedMeta(name, (), {"_dtype_name": dtype_name, "__module__": "torch"})


FloatTensor = _typed("FloatTensor", "float32")
DoubleTensor = _typed("DoubleTensor", "float64")
HalfTensor = _typed("HalfTensor", "float16")
LongTensor = _typed("LongTensor", "int64")
IntTensor = _typed("IntTensor", "int32")
ShortTensor = _typed("ShortTensor", "int16")
CharTensor = _typed("CharTensor", "int8")
ByteTensor = _typed("ByteTensor", "uint8")
BoolTensor = _typed("BoolTensor", "bool")
