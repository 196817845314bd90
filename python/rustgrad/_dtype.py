"""Dtypes with torch's names, and torch's type promotion.

Each rustgrad dtype maps to one array dtype of the backend (NumPy and CuPy share them).
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any, Optional, Tuple, Union

import numpy as _np


class dtype:
    """A tensor element type, named and printed as torch's (`torch.float32`)."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_cat")

    def __init__(self, name: str, np_dtype: Any, category: int) -> None:
        self.name = name
        self.np = _np.dtype(np_dtype)
        self._cat = category  # 0 bool, 1 integer, 2 floating
        self.is_floating_point = category == 2
        self.is_complex = False
        self.is_signed = self.np.kind in "fi"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        return self


float16 = dtype("float16", _np.float16, 2)
float32 = dtype("float32", _np.float32, 2)
float64 = dtype("float64", _np.float64, 2)
uint8 = dtype("uint8", _np.uint8, 1)
int8 = dtype("int8", _np.int8, 1)
int16 = dtype("int16", _np.int16, 1)
int32 = dtype("int32", _np.int32, 1)
int64 = dtype("int64", _np.int64, 1)
bool_ = dtype("bool", _np.bool_, 0)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool_)
_FROM_NP = {d.np: d for d in ALL}
_default = [float32]

#: torch's name of the legacy tensor type, for error messages (`torch.FloatTensor [3]`).
LEGACY_NAMES = {
    "float16": "HalfTensor",
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "uint8": "ByteTensor",
    "int8": "CharTensor",
    "int16": "ShortTensor",
    "int32": "IntTensor",
    "int64": "LongTensor",
    "bool": "BoolTensor",
}

BY_NAME = {d.name: d for d in ALL}

#: the C++ name torch prints for a dtype in its TypeMeta messages ('float', 'c10::Half')
CPP_NAMES = {
    "float16": "c10::Half", "float32": "float", "float64": "double", "int64": "long int",
    "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
    "bool": "bool",
}
#: the C type in torch's "value cannot be converted to type ... without overflow"
C_INT_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
               "int64": "int64_t"}


def cpp_name(d: dtype) -> str:
    """torch's C++ name of a dtype, as its messages print it ('float', 'double')."""
    return CPP_NAMES.get(d.name, d.name)


def scalar_type_name(d: dtype) -> str:
    """torch's ScalarType name of a dtype, as its error messages print it ('Float', 'Long')."""
    return LEGACY_NAMES[d.name][: -len("Tensor")]


def from_np(np_dtype: Any) -> dtype:
    """The rustgrad dtype of an array dtype; TypeError for types torch has no tensor for."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    try:
        nd = _np.dtype(np_dtype)
        if not nd.isnative and nd.newbyteorder("=") in _FROM_NP:
            raise ValueError(
                "given numpy array has byte order different from the native byte order. "
                "Conversion between byte orders is currently not supported."
            )
        return _FROM_NP[nd]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


def get_default_dtype() -> dtype:
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


def to_np(d: Union[dtype, None]) -> Any:
    if d is None:
        return None
    if isinstance(d, dtype):
        return d.np
    raise TypeError(f"dtype must be a rustgrad dtype, not {type(d).__name__}")


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both can be cast to."""
    if a is b:
        return a
    if a is bool_:
        return b
    if b is bool_:
        return a
    if a.is_floating_point or b.is_floating_point:
        if not b.is_floating_point:
            return a
        if not a.is_floating_point:
            return b
        return a if a.itemsize >= b.itemsize else b
    # integers: uint8 with a signed type needs the next wider signed type
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.itemsize >= b.itemsize else b


def _combine(higher: Union[dtype, None], lower: Union[dtype, None]) -> Union[dtype, None]:
    # torch's combine_categories: a lower-priority participant only raises the category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(x: Any) -> dtype:
    """The dtype torch gives a Python scalar taking part in an op."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, _builtins.int):
        return int64
    return _default[0]


def result_type(*operands: Any) -> dtype:
    """torch.result_type over tensors (dim > 0 first, then 0-dim) and Python scalars."""
    dim_t = zero_t = wrapped = None
    for x in operands:
        data = getattr(x, "_data", None)
        if data is None:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
            continue
        d = from_np(data.dtype)
        if data.ndim:
            dim_t = d if dim_t is None else promote_types(dim_t, d)
        else:
            zero_t = d if zero_t is None else promote_types(zero_t, d)
    out = _combine(dim_t, _combine(zero_t, wrapped))
    return out if out is not None else _default[0]


def checked_int_bounds(np_dt: Any) -> Optional[Tuple[int, int]]:
    """The Python ints torch's checked conversion lets into an integer dtype narrower than 64
    bits (an unsigned one takes negatives down to -max, wrapped); None for other dtypes."""
    if np_dt.kind not in "iu" or np_dt.itemsize == 8:
        return None
    bits = np_dt.itemsize * 8
    hi = (1 << bits) - 1 if np_dt.kind == "u" else (1 << (bits - 1)) - 1
    return (-hi if np_dt.kind == "u" else -(1 << (bits - 1))), hi
