"""Dtypes with torch's names, and torch's type promotion.

Each rustgrad dtype maps to one array dtype of the backend (NumPy and CuPy share them).
"""

from __future__ import annotations

import builtins as _builtins
from typing import Any, Optional, Tuple, Union

import numpy as _np


class dtype:
    """A tensor element type, named and printed as torch's (`torch.float32`)."""

    # a dict of slots gives each attribute a docstring (help() and the API reference show it)
    __slots__ = {
        "name": "The name without the module prefix, e.g. ``'float32'``.",
        "np": "The NumPy dtype that stores this type's elements.",
        "is_floating_point": "Whether this is a floating point type.",
        "is_complex": "Whether this is a complex type.",
        "is_signed": "Whether the type holds negative values (floating point and signed integers).",
        "itemsize": "The size of one element in bytes.",
        "_cat": "0 for bool, 1 for integer, 2 for floating point, 3 for complex types.",
    }

    def __init__(self, name: str, np_dtype: Any, category: int) -> None:
        self.name = name
        self.np = _np.dtype(np_dtype)
        self._cat = category  # 0 bool, 1 integer, 2 floating, 3 complex
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_signed = self.np.kind in "fic"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self) -> str:
        return self.name

    def to_real(self) -> dtype:
        """The real counterpart of a complex type; the type itself otherwise."""
        return _TO_REAL.get(self.name, self)

    def to_complex(self) -> dtype:
        """The complex counterpart of a floating point type; the type itself otherwise."""
        return _TO_COMPLEX.get(self.name, self)


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


class _unsupported_dtype(dtype):
    """A torch dtype no rustgrad backend stores (complex32): it exists so that programs
    can name it (in lookup tables, comparisons, finfo), and refuses any use for data."""

    __slots__ = ("_real_name",)

    def __init__(self, name: str, itemsize: _builtins.int, floating: _builtins.bool,
                 real: Optional[str] = None) -> None:
        self.name = name
        self._cat = 2 if floating else 3
        self.is_floating_point = floating
        self.is_complex = not floating
        self.is_signed = True
        self.itemsize = itemsize
        self._real_name = real

    @property  # type: ignore[override]
    def np(self) -> Any:
        """Raises TypeError: no backend stores elements of this type."""
        raise TypeError(
            f"rustgrad: {self!r} is not supported: the NumPy and CuPy backends store only "
            "float16/32/64, complex64/128, (u)int8, int16/32/64 and bool tensors")

    def to_real(self) -> dtype:
        """The real counterpart of a complex type; the type itself otherwise."""
        return BY_NAME[self._real_name] if self._real_name else self

    def to_complex(self) -> dtype:
        return self


class _bfloat16_dtype(dtype):
    """torch.bfloat16, stored as ml_dtypes' NumPy bfloat16 (the library JAX uses). ml_dtypes is
    optional and costs most of a second to import, so it is loaded on the first use of the type
    for data (`.np`); without it, that use raises a TypeError naming `pip install ml_dtypes`."""

    __slots__ = ("_np",)

    def __init__(self) -> None:
        self.name = "bfloat16"
        self._cat = 2
        self.is_floating_point = True
        self.is_complex = False
        self.is_signed = True
        self.itemsize = 2
        self._np = None

    @property  # type: ignore[override]
    def np(self) -> Any:
        """ml_dtypes.bfloat16 as a NumPy dtype (imported on first use)."""
        if self._np is None:
            try:
                import ml_dtypes  # optional dependency
            except ImportError:
                raise TypeError(
                    "rustgrad: torch.bfloat16 tensors need the ml_dtypes package (NumPy's "
                    "bfloat16 type): pip install ml_dtypes") from None
            self._np = _np.dtype(ml_dtypes.bfloat16)
            _FROM_NP[self._np] = self
        return self._np


bfloat16 = _bfloat16_dtype()
complex32 = _unsupported_dtype("complex32", 4, False, "float16")
complex64 = dtype("complex64", _np.complex64, 3)
complex128 = dtype("complex128", _np.complex128, 3)
chalf, cfloat, cdouble = complex32, complex64, complex128
UNSUPPORTED = (complex32,)
_TO_REAL = {"complex64": float32, "complex128": float64}
_TO_COMPLEX = {"float16": complex32, "float32": complex64, "float64": complex128}

ALL = (float16, float32, float64, uint8, int8, int16, int32, int64, bool_, complex64, complex128)
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
    "bfloat16": "BFloat16Tensor",
    "complex64": "ComplexFloatTensor",
    "complex128": "ComplexDoubleTensor",
}

BY_NAME = {d.name: d for d in ALL + UNSUPPORTED + (bfloat16,)}

#: the C++ name torch prints for a dtype in its TypeMeta messages ('float', 'c10::Half')
CPP_NAMES = {
    "float16": "c10::Half", "float32": "float", "float64": "double", "int64": "long int",
    "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
    "bool": "bool", "bfloat16": "c10::BFloat16",
    "complex64": "c10::complex<float>", "complex128": "c10::complex<double>",
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
        if nd.name == "bfloat16" and nd.kind == "V":  # ml_dtypes' type, made before .np was read
            if bfloat16.np == nd:
                return bfloat16
        if not nd.isnative and nd.newbyteorder("=") in _FROM_NP:
            raise ValueError(
                "given numpy array has byte order different from the native byte order. "
                "Conversion between byte orders is currently not supported."
            )
        return _FROM_NP[nd]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np_dtype}. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint8, "
            "and bool."
        ) from None


def is_floating_np(np_dtype: Any) -> _builtins.bool:
    """Whether arrays of this NumPy dtype hold floating point values: NumPy's kind "f", and
    ml_dtypes' bfloat16 (kind "V"), which checks of `dtype.kind == "f"` miss."""
    if np_dtype.kind == "f":
        return True
    return np_dtype.kind == "V" and bfloat16._np is not None and np_dtype == bfloat16._np


def default_complex_dtype() -> dtype:
    """The dtype of new complex tensors: the complex counterpart of the default float dtype."""
    return _default[0].to_complex()


def get_default_dtype() -> dtype:
    """The dtype of new floating-point tensors."""
    return _default[0]


def set_default_dtype(d: dtype) -> None:
    """Sets the dtype of new floating-point tensors (float32 unless changed)."""
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if d is bfloat16:
        # until every op takes bfloat16 arrays for floating point ones (most check kind "f")
        raise TypeError("rustgrad: torch.bfloat16 is not supported as the default dtype: "
                        "make bfloat16 tensors with dtype= or .to(torch.bfloat16)")
    if isinstance(d, _unsupported_dtype):
        _ = d.np  # raises: rustgrad cannot make tensors of it
    _default[0] = d


def to_np(d: Union[dtype, None]) -> Any:
    if d is None:
        return None
    if isinstance(d, dtype):
        return d.np  # an unsupported dtype raises its TypeError here
    raise TypeError(f"dtype must be a rustgrad dtype, not {type(d).__name__}")


def promote_types(a: dtype, b: dtype) -> dtype:
    """torch.promote_types: the smallest dtype both can be cast to."""
    if a is b:
        return a
    if a is bool_:
        return b
    if b is bool_:
        return a
    if a.is_complex or b.is_complex:
        # the complex type whose real part holds both real parts (complex64 + float64 is
        # complex128; an integer joins the complex type as it is)
        return promote_types(a.to_real(), b.to_real()).to_complex()
    if a.is_floating_point or b.is_floating_point:
        if not b.is_floating_point:
            return a
        if not a.is_floating_point:
            return b
        if a.itemsize == b.itemsize == 2:  # float16 with bfloat16: neither holds the other
            return float32
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
    if higher.is_complex:
        return higher
    if lower.is_complex:  # a complex scalar lifts a floating tensor to its complex counterpart
        return higher.to_complex() if higher.is_floating_point else lower
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
    if isinstance(x, _builtins.complex):
        return _default[0].to_complex()
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


# ---- finfo / iinfo --------------------------------------------------------------------------
class finfo:
    """Machine limits of a floating-point dtype (torch.finfo): bits, eps, max, min, tiny,
    smallest_normal, resolution, dtype (its name)."""

    def __init__(self, type: Optional[dtype] = None) -> None:  # noqa: A002  (torch's name)
        d = _default[0] if type is None else type
        if not isinstance(d, dtype) or not (d.is_floating_point or d.is_complex):
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        d = d.to_real()
        if d is bfloat16:
            # bfloat16 is float32 with 8 bits of mantissa: float32's range, a coarse eps
            self.bits, self.eps, self.max = 16, 2.0 ** -7, _builtins.float.fromhex("0x1.fep127")
            self.tiny = _builtins.float.fromhex("0x1p-126")
            self.resolution = 0.01
        else:
            info = _np.finfo(d.np)
            self.bits = _builtins.int(info.bits)
            self.eps = _builtins.float(info.eps)
            self.max = _builtins.float(info.max)
            self.tiny = _builtins.float(info.smallest_normal)
            self.resolution = 10.0 ** -_builtins.int(info.precision)
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = d.name

    def __eq__(self, other: object) -> _builtins.bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> _builtins.int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype (torch.iinfo): bits, max, min, dtype (its name)."""

    def __init__(self, type: dtype) -> None:  # noqa: A002  (torch's name)
        if type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dtype) or type._cat != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        info = _np.iinfo(type.np)
        self.bits = _builtins.int(info.bits)
        self.max = _builtins.int(info.max)
        self.min = _builtins.int(info.min)
        self.dtype = type.name

    def __eq__(self, other: object) -> _builtins.bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> _builtins.int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
