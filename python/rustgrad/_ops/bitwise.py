"""Bitwise ops on integer and bool tensors: bitwise_and/or/xor/not, the shifts
bitwise_left_shift/bitwise_right_shift, their in-place forms and the operators & | ^ ~ << >>
(reflected and in-place too). Their results are integral: no gradient.

Each op has one kernel, shared by its function, its method, its operator and its in-place form.
The functions refuse an operand that is neither a tensor nor a number with torch's TypeError;
the operators return NotImplemented for it, so that Python raises its own TypeError, as torch's.
A Python int operand is read in the tensor's dtype, wrapped around as torch reads it (uint8 & -1
is uint8 & 255). A shift by a negative amount or by the dtype's width or more gives 0 (a right
shift of a negative signed value gives -1), as torch's kernels."""

from __future__ import annotations

from typing import Any, Callable, Tuple

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import _type_name, as_scalar, broadcast_error, check_inplace_cast, const, promote, wrap_int
from .copyslices import inplace_from


# ---- the kernels -------------------------------------------------------------------------------
def _shift(xp: Any, a: Any, b: Any, left: bool) -> Any:
    """a << b or a >> b of integer arrays (b an array of a's dtype, or a Python int read in it),
    with torch's results for shift amounts outside [0, bits)."""
    bits = a.dtype.itemsize * 8
    signed = a.dtype.kind == "i"
    if not hasattr(b, "dtype"):
        if 0 <= b < bits:
            out = a << b if left else a >> b
        elif left or not signed:
            out = xp.zeros_like(a)
        else:
            out = a >> (bits - 1)
        return out.astype(a.dtype, copy=False)
    valid = (b >= 0) & (b < bits)
    amount = xp.where(valid, b, xp.zeros_like(b))
    shifted = a << amount if left else a >> amount
    far = xp.zeros_like(shifted) if left or not signed else a >> (bits - 1)
    return xp.where(valid, shifted, far).astype(a.dtype, copy=False)


# (function name, the name torch's kernel errors give, the array computation)
_Kernel = Tuple[str, str, Callable[[Any, Any, Any], Any]]
_AND: _Kernel = ("bitwise_and", "bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b))
_OR: _Kernel = ("bitwise_or", "bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b))
_XOR: _Kernel = ("bitwise_xor", "bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b))
_LSHIFT: _Kernel = ("bitwise_left_shift", "lshift", lambda xp, a, b: _shift(xp, a, b, True))
_RSHIFT: _Kernel = ("bitwise_right_shift", "rshift", lambda xp, a, b: _shift(xp, a, b, False))
_SHIFTS = ("lshift", "rshift")


def _refuse(kernel: str, np_dt: Any) -> None:
    """torch's error for a dtype the kernel has no loop for: floating point (and bool, for the
    shifts)."""
    if _dtype.is_floating_np(np_dt) or np_dt.kind == "c" or (np_dt.kind == "b" and kernel in _SHIFTS):
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for '
                                  f"'{_type_name(_dtype.from_np(np_dt))}'")


def _int_scalar(s: Any) -> None:
    """torch's refusal of a Python int no 64-bit integer holds."""
    if type(s) is int:
        if s >= 1 << 64:
            raise OverflowError("int too big to convert")
        if s < -(1 << 63):
            raise OverflowError("can't convert negative int to unsigned")


def _binary(k: _Kernel, input: Tensor, other: Any) -> Any:
    """The op k of a tensor and a tensor or a number, or NotImplemented when other is neither."""
    _, kernel, fn = k
    xp = input._backend
    if isinstance(other, Tensor):
        a, b = promote(input, other)
        _refuse(kernel, a.dtype)
        try:
            out = fn(xp, a, b)
        except ValueError as e:
            raise broadcast_error(e, a.shape, b.shape) from None
        return const(out)
    s = as_scalar(other)
    if s is None:
        return NotImplemented
    rt = _dtype.result_type(input, s).np
    _refuse(kernel, rt)
    _int_scalar(s)
    a = input._data.astype(rt, copy=False)
    if type(s) is int and rt.kind in "iu":
        s = wrap_int(rt, s)
    elif rt.kind == "b":
        s = bool(s)
    return const(fn(xp, a, s))


def _reflected(k: _Kernel, input: Tensor, number: Any) -> Any:
    """number (op) input, for a number on the left: the number read in the result's dtype."""
    s = as_scalar(number)
    if s is None:
        return NotImplemented
    rt = _dtype.result_type(input, s).np
    _refuse(k[1], rt)
    _int_scalar(s)
    xp = input._backend
    if type(s) is int and rt.kind in "iu":
        s = wrap_int(rt, s)
    first = xp.full(input._data.shape, s, dtype=rt)
    return const(k[2](xp, first, input._data.astype(rt, copy=False)))


def _invalid(name: str, input: Any, other: Any) -> TypeError:
    return TypeError(
        f"{name}() received an invalid combination of arguments - got "
        f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Number self, Tensor other)\n"
        " * (Tensor input, Number other, *, Tensor out = None)\n")


def _function(k: _Kernel, input: Any, other: Any) -> Tensor:
    if not isinstance(input, Tensor):
        raise _invalid(k[0], input, other)
    out = _binary(k, input, other)
    if out is NotImplemented:
        raise _invalid(k[0], input, other)
    return out


def _inplace(k: _Kernel, self: Tensor, other: Any) -> Tensor:
    """The op written into self: a result dtype self cannot hold is refused first, as torch's."""
    if not isinstance(other, Tensor) and as_scalar(other) is None:
        raise TypeError(f"{k[0]}_(): argument 'other' (position 1) must be Tensor or Number, "
                        f"not {type(other).__name__}")
    check_inplace_cast(self, _dtype.result_type(self, other))
    return inplace_from(self, lambda src: _binary(k, src, other), False, other, cast=True)


def _number_first(k: _Kernel) -> Callable[..., Tensor]:
    """torch.bitwise_and(3, t): the number as a wrapped 0-d tensor of the result's kind."""
    def number_first(number: Any, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            raise _invalid(k[0], number, other)
        out = _reflected(k, other, number)
        if out is NotImplemented:
            raise _invalid(k[0], number, other)
        return out

    return number_first


# ---- and, or, xor --------------------------------------------------------------------------------
@op(method="bitwise_and", function="bitwise_and", number_first=_number_first(_AND))
def bitwise_and(input: Tensor, other: Any) -> Tensor:
    """The bitwise and of integer tensors, the logical and of bool ones, elementwise, broadcast.

    Args:
        input (Tensor): integers or bools.
        other (Tensor or Number): integers or bools, broadcast with input.

    Floating-point operands are refused, as torch's.

    Example::

        >>> rustgrad.bitwise_and(rustgrad.tensor([12, -3]), rustgrad.tensor([10, 7]))
        tensor([8, 5])
    """
    return _function(_AND, input, other)


@op(method="bitwise_or", function="bitwise_or", number_first=_number_first(_OR),
    args_like=bitwise_and)
def bitwise_or(input: Tensor, other: Any) -> Tensor:
    """The bitwise or of integer tensors, the logical or of bool ones, elementwise, broadcast.

    Example::

        >>> rustgrad.bitwise_or(rustgrad.tensor([12, -3]), rustgrad.tensor([10, 7]))
        tensor([14, -1])
    """
    return _function(_OR, input, other)


@op(method="bitwise_xor", function="bitwise_xor", number_first=_number_first(_XOR),
    args_like=bitwise_and)
def bitwise_xor(input: Tensor, other: Any) -> Tensor:
    """The bitwise xor of integer tensors, the logical xor of bool ones, elementwise, broadcast.

    Example::

        >>> rustgrad.bitwise_xor(rustgrad.tensor([12, -3]), rustgrad.tensor([10, 7]))
        tensor([ 6, -6])
    """
    return _function(_XOR, input, other)


@op(method="bitwise_and_", args_like=bitwise_and)
def bitwise_and_(self: Tensor, other: Any) -> Tensor:
    """bitwise_and written into self."""
    return _inplace(_AND, self, other)


@op(method="bitwise_or_", args_like=bitwise_and)
def bitwise_or_(self: Tensor, other: Any) -> Tensor:
    """bitwise_or written into self."""
    return _inplace(_OR, self, other)


@op(method="bitwise_xor_", args_like=bitwise_and)
def bitwise_xor_(self: Tensor, other: Any) -> Tensor:
    """bitwise_xor written into self."""
    return _inplace(_XOR, self, other)


@op(dunder=("__and__", "__rand__"))
def and_(input: Tensor, other: Any) -> Any:
    """input & other: logical and of bool tensors, bitwise and of integer ones."""
    return _binary(_AND, input, other)


@op(dunder=("__or__", "__ror__"))
def or_(input: Tensor, other: Any) -> Any:
    """input | other: logical or of bool tensors, bitwise or of integer ones."""
    return _binary(_OR, input, other)


@op(dunder=("__xor__", "__rxor__"))
def xor(input: Tensor, other: Any) -> Any:
    """input ^ other: logical xor of bool tensors, bitwise xor of integer ones."""
    return _binary(_XOR, input, other)


def _inplace_operator(k: _Kernel, self: Tensor, other: Any) -> Any:
    if not isinstance(other, Tensor) and as_scalar(other) is None:
        return NotImplemented
    return _inplace(k, self, other)


@op(dunder="__iand__")
def iand(self: Tensor, other: Any) -> Any:
    """self &= other, in place."""
    return _inplace_operator(_AND, self, other)


@op(dunder="__ior__")
def ior(self: Tensor, other: Any) -> Any:
    """self |= other, in place."""
    return _inplace_operator(_OR, self, other)


@op(dunder="__ixor__")
def ixor(self: Tensor, other: Any) -> Any:
    """self ^= other, in place."""
    return _inplace_operator(_XOR, self, other)


# ---- not -----------------------------------------------------------------------------------------
def _not(input: Tensor) -> Tensor:
    d = input._data
    _refuse("bitwise_not", d.dtype)
    return const(input._backend.invert(d))


@op(method="bitwise_not", function="bitwise_not")
def bitwise_not(input: Tensor) -> Tensor:
    """The bitwise not of an integer tensor (-x - 1), the logical not of a bool one.

    Example::

        >>> rustgrad.bitwise_not(rustgrad.tensor([0, 5, -1]))
        tensor([-1, -6,  0])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bitwise_not(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _not(input)


@op(method="bitwise_not_")
def bitwise_not_(self: Tensor) -> Tensor:
    """bitwise_not written into self."""
    return inplace_from(self, _not, False)


@op(dunder="__invert__")
def invert(input: Tensor) -> Any:
    """~input: logical not of a bool tensor, bitwise not of an integer one."""
    if _dtype.is_floating_np(input._data.dtype):
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _not(input)


# ---- shifts --------------------------------------------------------------------------------------
@op(method="bitwise_left_shift", function="bitwise_left_shift",
    number_first=_number_first(_LSHIFT))
def bitwise_left_shift(input: Tensor, other: Any) -> Tensor:
    """input shifted left by other bits (input * 2**other, wrapped to the dtype), elementwise.

    Args:
        input (Tensor): integers (not bool).
        other (Tensor or Number): the shift amounts, broadcast with input.

    An amount that is negative or at least the dtype's width gives 0, as torch's.

    Example::

        >>> rustgrad.bitwise_left_shift(rustgrad.tensor([1, -3]), rustgrad.tensor([4, 1]))
        tensor([16, -6])
    """
    return _function(_LSHIFT, input, other)


@op(method="bitwise_right_shift", function="bitwise_right_shift",
    number_first=_number_first(_RSHIFT))
def bitwise_right_shift(input: Tensor, other: Any) -> Tensor:
    """input shifted right by other bits (arithmetic: floor(input / 2**other)), elementwise.

    Args:
        input (Tensor): integers (not bool).
        other (Tensor or Number): the shift amounts, broadcast with input.

    An amount that is negative or at least the dtype's width gives 0, or -1 for a negative
    signed value, as torch's.

    Example::

        >>> rustgrad.bitwise_right_shift(rustgrad.tensor([16, -7]), 2)
        tensor([ 4, -2])
    """
    return _function(_RSHIFT, input, other)


@op(method="bitwise_left_shift_", args_like=bitwise_left_shift)
def bitwise_left_shift_(self: Tensor, other: Any) -> Tensor:
    """bitwise_left_shift written into self."""
    return _inplace(_LSHIFT, self, other)


@op(method="bitwise_right_shift_", args_like=bitwise_right_shift)
def bitwise_right_shift_(self: Tensor, other: Any) -> Tensor:
    """bitwise_right_shift written into self."""
    return _inplace(_RSHIFT, self, other)


@op(dunder="__lshift__")
def lshift(input: Tensor, other: Any) -> Any:
    """input << other."""
    return _binary(_LSHIFT, input, other)


@op(dunder="__rshift__")
def rshift(input: Tensor, other: Any) -> Any:
    """input >> other."""
    return _binary(_RSHIFT, input, other)


@op(dunder="__rlshift__")
def rlshift(input: Tensor, other: Any) -> Any:
    """other << input, for a number on the left."""
    return _reflected(_LSHIFT, input, other)


@op(dunder="__rrshift__")
def rrshift(input: Tensor, other: Any) -> Any:
    """other >> input, for a number on the left."""
    return _reflected(_RSHIFT, input, other)


@op(dunder="__ilshift__")
def ilshift(self: Tensor, other: Any) -> Any:
    """self <<= other, in place."""
    return _inplace_operator(_LSHIFT, self, other)


@op(dunder="__irshift__")
def irshift(self: Tensor, other: Any) -> Any:
    """self >>= other, in place."""
    return _inplace_operator(_RSHIFT, self, other)
