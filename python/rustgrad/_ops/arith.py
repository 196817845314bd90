"""add, sub, mul, div (and its rounding modes, floor_divide and `//`), neg, positive, pow, remainder
with broadcasting, Python scalars and torch's promotion; their in-place forms and aliases
(multiply_, divide_, subtract_, ...); addcmul/addcdiv."""

from __future__ import annotations

import math
import operator as _operator
from typing import Any

from .. import _creation, _dtype
from .._backends import namespace_of
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
from ._util import (
    NOT_IMPLEMENTED,
    _type_name,
    as_scalar,
    broadcast_error,
    check_inplace,
    check_inplace_cast,
    check_internal_overlap,
    check_no_partial_overlap,
    complex_scalar,
    is_bf16,
    is_grad_enabled,
    opmath,
    promote,
    quiet_fp,
    same_device,
    scalar_operand,
    with_float_scalar,
    wrap_int,
)
from .compare import where
from .copyslices import inplace_from
from .pointwise import reciprocal


def _float_dtype_for_div(ad: Any, bd: Any = None) -> Any:
    if ad.dtype.kind in "biu" and (bd is None or bd.dtype.kind in "biu"):
        return _dtype.get_default_dtype().np
    return None


# Gradients are returned at the output's shape and dtype: the engine sums each to its input's
# shape and casts it to its dtype (Note [Input metadata], rust/core/src/engine.rs). A Python
# scalar operand is an input without an edge (None), as torch's wrapped numbers, and gets None.

# ---- add / sub -------------------------------------------------------------------------
def _add_bw(g: Tensor, saved: Any, alpha: Any) -> Any:
    if alpha is None:  # the hot path: no alpha given (a scalar operand's node too)
        return g, g
    return g, (g if alpha == 1 else g * alpha)


ADD = node("AddBackward0", _add_bw, forward=ELEMENTWISE, native="identity")


@op(method="add", dunder="__add__", function="add", grad_fn="AddBackward0",
    number_first=lambda n, o, **kw: _wrapped(add)(n, o, **kw))
def add(input: Tensor, other: Any, *, alpha: Any = 1, _out_dtype: Any = None) -> Tensor:
    """input + alpha * other, broadcast, with torch's type promotion.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand, broadcast with input.
        alpha (Number, optional): keyword-only; the multiplier for other. Default: 1.

    Each operand's gradient is the incoming gradient summed over the dims it was broadcast
    along (times alpha for other).

    Example::

        >>> a = rustgrad.tensor([1., 2.])
        >>> a + 1
        tensor([2., 3.])
        >>> rustgrad.add(a, rustgrad.tensor([[10.], [20.]]), alpha=2)
        tensor([[21., 22.],
                [41., 42.]])
        >>> rustgrad.tensor([1, 2]) + 0.5
        tensor([1.5000, 2.5000])
    """
    if type(other) is float and alpha == 1 and _out_dtype is None:
        # fast path: float tensor + Python float keeps the tensor's dtype (computed in Rust
        # for a contiguous float32/float64 NumPy array)
        out = ADD.record_scalar(input, other, 0)
        if out is not None:
            return out
        ad = input._data
        if ad.dtype.kind == "f":
            return ADD.record(ad + other, (input, None))
        if is_bf16(ad.dtype):
            return ADD.record(with_float_scalar(_operator.add, ad, other), (input, None))
    elif isinstance(other, Tensor) and alpha == 1 and _out_dtype is None:
        # fast path: two contiguous float tensors of one shape and dtype (computed in Rust)
        out = ADD.record_binary(input, other, 0, alpha)
        if out is not None:
            return out
    return _add_or_sub(input, other, alpha, _out_dtype, ADD, _operator.add)


def _add_or_sub(input: Tensor, other: Any, alpha: Any, out_dtype: Any, spec: Any,
                combine: Any) -> Tensor:
    """add's and sub's body: input combined (+ or -) with alpha * other, a tensor or a number."""
    if isinstance(other, Tensor):
        ad, bd = promote(input, other)
        if alpha != 1:
            _check_int_fits(ad.dtype, alpha)
        try:
            out = combine(ad, bd if alpha == 1 else bd * alpha)
        except ValueError as e:
            raise broadcast_error(e, ad.shape, bd.shape) from None
        if out_dtype is not None:
            out = out.astype(out_dtype, copy=False)
        return spec.record(out, (input, other), ctx=alpha)
    s = as_scalar(other)
    if s is None:
        if type(other) is complex:
            return _add_or_sub(input, complex_scalar(input, other), alpha, out_dtype, spec,
                               combine)
        return NotImplemented
    ad = scalar_operand(input._data, s)
    if alpha != 1:
        _check_int_fits(ad.dtype, alpha)
    return spec.record(combine(ad, _scaled(ad, s, alpha)), (input, None))


@op(dunder="__radd__")
def radd(input: Tensor, other: Any) -> Tensor:
    """other + input, for a number on the left."""
    return add(input, other)


def _sub_bw(g: Tensor, saved: Any, alpha: Any) -> Any:
    return g, (-g if alpha is None or alpha == 1 else g * -alpha)


SUB = node("SubBackward0", _sub_bw, forward=ELEMENTWISE)


def _check_sub_bool(a: Any, b: Any) -> None:
    """torch refuses subtraction with a bool operand (tensor or Python bool)."""
    def is_bool(x: Any) -> bool:
        return x._data.dtype.kind == "b" if isinstance(x, Tensor) else type(x) is bool

    ba, bb = is_bool(a), is_bool(b)
    if ba and bb and isinstance(a, Tensor) and isinstance(b, Tensor):
        raise NotImplementedError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )
    if ba or bb:
        raise NotImplementedError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


@op(method=("sub", "subtract"), dunder="__sub__", function=("sub", "subtract"),
    grad_fn="SubBackward0", number_first=lambda n, o, **kw: _wrapped(sub)(n, o, **kw))
def sub(input: Tensor, other: Any, *, alpha: Any = 1, _out_dtype: Any = None) -> Tensor:
    """input - alpha * other, broadcast, with torch's type promotion.

    Args:
        input (Tensor or Number): the first operand.
        other (Tensor or Number): the operand subtracted, broadcast with input.
        alpha (Number, optional): keyword-only; the multiplier for other. Default: 1.

    Bool operands are refused, as torch's. `subtract` is the same op.

    Example::

        >>> rustgrad.tensor([5., 7.]) - rustgrad.tensor([1., 2.])
        tensor([4., 5.])
        >>> rustgrad.sub(rustgrad.tensor([5., 7.]), 1., alpha=3)
        tensor([2., 4.])
    """
    if isinstance(other, Tensor) and alpha == 1 and _out_dtype is None:
        out = SUB.record_binary(input, other, 1, alpha)  # add's fast path
        if out is not None:
            return out
    _check_sub_bool(input, other)
    return _add_or_sub(input, other, alpha, _out_dtype, SUB, _operator.sub)


_SMALL_NUMBERS = (int, float)  # not bool: True - x is refused


def _rsub_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return -g


RSUB = node("RsubBackward1", _rsub_bw, forward=ELEMENTWISE)


@op(dunder="__rsub__", grad_fn="RsubBackward1")
def rsub(input: Tensor, other: Any) -> Tensor:
    """b - a for a Python scalar b (torch's RsubBackward1)."""
    if type(other) in _SMALL_NUMBERS and abs(other) < 2**53:
        # fast path, as add's (an int exactly a float64, so cast once to the tensor's dtype)
        out = RSUB.record_scalar(input, other, 2, None, False)
        if out is not None:
            return out
    _check_sub_bool(input, other)
    s = as_scalar(other)
    if s is None:
        if type(other) is complex:
            cd, ad = promote(complex_scalar(input, other), input)
            return RSUB.record(cd - ad, (input,))
        return NotImplemented
    ad = scalar_operand(input._data, s)
    return RSUB.record(_int_operand(ad, s) - ad, (input,))


def _neg_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return -g


NEG = node("NegBackward0", _neg_bw, forward=ELEMENTWISE)


@op(method=("neg", "negative"), dunder="__neg__", function=("neg", "negative"), grad_fn="NegBackward0")
def neg(input: Tensor) -> Tensor:
    """-input, elementwise.

    Args:
        input (Tensor): the input tensor (not bool).

    Example::

        >>> -rustgrad.tensor([1., -2.])
        tensor([-1.,  2.])
    """
    if input._data.dtype.kind == "b":
        raise NotImplementedError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return NEG.record(-input._data, (input,))


@op(method="positive", dunder="__pos__", function="positive")
def positive(input: Tensor) -> Tensor:
    """input itself (+input): the very tensor, not a copy (bool tensors are refused, as torch's).

    Example::

        >>> x = rustgrad.tensor([-1., 2.])
        >>> rustgrad.positive(x) is x
        True
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input._data.dtype.kind == "b":
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported.")
    return input


# ---- mul / div -------------------------------------------------------------------------
# A tensor factor is saved where the other factor's gradient needs it (torch's rule); a Python
# scalar factor is ctx, and `_saved_other` gives it as torch's wrapped number.
def _conj(t: Tensor) -> Tensor:
    """t's complex conjugate (t itself when real): torch's complex gradients take it."""
    return t.conj() if t._data.dtype.kind == "c" else t


def _mul_bw(g: Tensor, saved: Any, scalar: Any) -> Any:
    if scalar is not None:  # a Python scalar operand (ctx); a tensor operand records no ctx
        return g * scalar, None
    other, self_ = saved.other, saved.self
    if g._data.dtype.kind == "c":  # a complex operand makes the output (so g) complex
        other, self_ = (None if other is None else _conj(other),
                        None if self_ is None else _conj(self_))
    return (None if other is None else g * other, None if self_ is None else g * self_)


def _wrapped_other(saved: Any, scalar: Any) -> Any:
    if len(saved) < 2:  # recorded with nothing saved: a Python scalar operand
        return _creation.tensor(scalar)
    return saved[0]


# slots in torch's packing order (saved_tensors_hooks see other first)
MUL = node("MulBackward0", _mul_bw, saved=("other", "self"), getters={"other": _wrapped_other},
           forward=ELEMENTWISE, native="scale")


@op(method=("mul", "multiply"), dunder=("__mul__", "__rmul__"), function=("mul", "multiply"),
    grad_fn="MulBackward0", number_first=lambda n, o: _wrapped(mul)(n, o))
def mul(input: Tensor, other: Any, *, _out_dtype: Any = None) -> Tensor:
    """input * other, elementwise, broadcast, with torch's type promotion.

    Args:
        input (Tensor or Number): the first factor.
        other (Tensor or Number): the second factor, broadcast with input.

    The gradient of each factor is the incoming gradient times the other factor, summed over
    broadcast dims. `multiply` is the same op.

    Example::

        >>> x = rustgrad.tensor([1., 2.], requires_grad=True)
        >>> y = x * rustgrad.tensor([3., 4.])
        >>> y
        tensor([3., 8.], grad_fn=<MulBackward0>)
        >>> y.sum().backward()
        >>> x.grad
        tensor([3., 4.])
    """
    if type(other) is float and _out_dtype is None:
        # fast path, as add's
        out = MUL.record_scalar(input, other, 1, other)
        if out is not None:
            return out
        ad = input._data
        if ad.dtype.kind == "f":
            return MUL.record(ad * other, (input, None), other)
        if is_bf16(ad.dtype):
            return MUL.record(with_float_scalar(_operator.mul, ad, other), (input, None), other)
    if isinstance(other, Tensor):
        saved = (other if input.requires_grad else None, input if other.requires_grad else None)
        if _out_dtype is None:
            out = MUL.record_binary(input, other, 2, None, saved)  # add's fast path
            if out is not None:
                return out
        ad, bd = promote(input, other)
        try:
            out = ad * bd
        except ValueError as e:
            raise broadcast_error(e, ad.shape, bd.shape) from None
        if _out_dtype is not None:
            out = out.astype(_out_dtype, copy=False)
        return MUL.record(out, (input, other), other=saved[0], self=saved[1])
    s = as_scalar(other)
    if s is None:
        if type(other) is complex:
            return mul(input, complex_scalar(input, other), _out_dtype=_out_dtype)
        return NotImplemented
    ad = scalar_operand(input._data, s)
    return MUL.record(ad * _int_operand(ad, s), (input, None), s)


# The divisor is always saved (self's gradient needs it), self where other's gradient needs it;
# a Python scalar divisor is ctx, as mul's.
def _div_bw(g: Tensor, saved: Any, scalar: Any) -> Any:
    if scalar is not None:  # a Python scalar divisor (ctx)
        return g / scalar, None
    other, self_ = saved.other, saved.self
    # torch's div_tensor_other_backward: -grad * ((self / other) / other)
    if g._data.dtype.kind == "c" or other._data.dtype.kind == "c":
        other = _conj(other)
        return g / other, (None if self_ is None else -g * ((_conj(self_) / other) / other))
    return g / other, (None if self_ is None else -g * ((self_ / other) / other))


DIV = node("DivBackward0", _div_bw, saved=("other", "self"), getters={"other": _wrapped_other}, forward=ELEMENTWISE)


@op(method=("div", "divide", "true_divide"), dunder="__truediv__",
    function=("div", "divide", "true_divide"), grad_fn=("DivBackward0", "DivBackward2"),
    number_first=lambda n, o, **kw: _wrapped(div)(n, o, **kw))
def div(input: Tensor, other: Any, *, rounding_mode: Any = None, _out_dtype: Any = None) -> Tensor:
    """input / other: true division, or rounded toward zero ("trunc") or down ("floor").

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor, broadcast with input.
        rounding_mode (str, optional): keyword-only; None for true division (integers give
            float32), "trunc" or "floor" to round the quotient, keeping integer dtypes.

    Dividing by zero gives inf or NaN for floats; `divide` and `true_divide` are the same op.

    Example::

        >>> rustgrad.tensor([7, -7]) / 2
        tensor([ 3.5000, -3.5000])
        >>> rustgrad.div(rustgrad.tensor([7, -7]), 2, rounding_mode="trunc")
        tensor([ 3, -3])
        >>> rustgrad.div(rustgrad.tensor([7, -7]), 2, rounding_mode="floor")
        tensor([ 3, -4])
    """
    if rounding_mode is not None:
        return _div_rounding(input, other, rounding_mode)
    if isinstance(other, Tensor):
        if _out_dtype is None:
            out = DIV.record_binary(input, other, 3, None,  # add's fast path
                                    (other, input if other.requires_grad else None))
            if out is not None:
                return out
        ad, bd = promote(input, other)
        ft = _float_dtype_for_div(ad, bd)
        if ft is not None:
            ad, bd = ad.astype(ft), bd.astype(ft)
        try:
            out = ad / bd
        except ValueError as e:
            raise broadcast_error(e, ad.shape, bd.shape) from None
        if _out_dtype is not None:
            out = out.astype(_out_dtype, copy=False)
        return DIV.record(out, (input, other), self=input if other.requires_grad else None,
                          other=other)
    s = as_scalar(other)
    if s is None:
        if type(other) is complex and rounding_mode is None:
            return div(input, complex_scalar(input, other), _out_dtype=_out_dtype)
        return NotImplemented
    ad = input._data
    ft = _float_dtype_for_div(ad)
    if ft is not None:
        ad = ad.astype(ft)
    out = with_float_scalar(_operator.truediv, ad, s) if type(s) is float else ad / s
    return DIV.record(out, (input, None), s)


def _rounded_quotient(xp: Any, ad: Any, bd: Any, mode: str) -> Any:
    """ad / bd rounded toward zero ("trunc") or down ("floor"), arrays of one dtype (bd may be a
    Python number read in it): integer division by zero and bool operands refused as torch's."""
    if ad.dtype.kind == "b":
        raise NotImplementedError(f'"div_{mode}_cpu" not implemented for \'Bool\'')
    if ad.dtype.kind in "iu":
        if bool((bd == 0).any()) if hasattr(bd, "dtype") else bd == 0:
            raise RuntimeError("ZeroDivisionError")
        q = xp.floor_divide(ad, bd)
        if mode == "floor" or ad.dtype.kind == "u":
            return q
        # toward zero: one more than the floor where the division is inexact and the signs differ
        inexact = xp.remainder(ad, bd) != 0
        return q + (inexact & ((ad < 0) != (bd < 0))).astype(ad.dtype)
    with quiet_fp(xp):
        return xp.floor_divide(ad, bd) if mode == "floor" else xp.trunc(ad / bd)


def _quotient_operands(a: Tensor, b: Any) -> Any:
    """(ad, bd) of a rounded division in torch's dtype, or None when b is no tensor or number."""
    if isinstance(b, Tensor):
        return promote(a, b)
    s = as_scalar(b)
    if s is None:
        return None
    ad = scalar_operand(a._data, s)
    return ad, _int_operand(ad, s)


def _div_rounding(a: Tensor, b: Any, mode: str, out_dtype: Any = None) -> Tensor:
    if mode not in ("trunc", "floor"):
        raise RuntimeError(
            f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'"
        )
    operands = _quotient_operands(a, b)
    if operands is None:
        raise TypeError(f"div(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(b).__name__}")
    ad, bd = operands
    try:
        out = _rounded_quotient(a._backend, ad, bd, mode)
    except ValueError as e:
        raise broadcast_error(e, ad.shape, getattr(bd, "shape", ())) from None
    if out_dtype is not None:
        out = out.astype(out_dtype, copy=False)
    # torch records DivBackward2 whose gradients are zeros (the rounding's derivative)
    inputs = (a, b if isinstance(b, Tensor) else None)
    ctx = tuple(None if t is None else (t._data.shape, _dtype.from_np(t._data.dtype))
                for t in inputs)
    return DIV_ROUNDING.record(out, inputs, ctx)


def _div_rounding_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return tuple(None if c is None else _creation.zeros(c[0], dtype=c[1], device=g.device) for c in ctx)


DIV_ROUNDING = node("DivBackward2", _div_rounding_bw, forward=ELEMENTWISE)


@op(dunder="__rtruediv__")
def rdiv(input: Tensor, other: Any) -> Tensor:
    """b / a for a Python scalar b: torch computes a.reciprocal() * b (MulBackward0)."""
    s = as_scalar(other)
    if s is None:
        if type(other) is complex:
            if input._data.dtype.kind == "c":  # (reciprocal's formula is real-only)
                return div(complex_scalar(input, other), input)
            return mul(reciprocal(input), complex_scalar(input, other))
        return NotImplemented

    return mul(reciprocal(input), s)


def _floor_divide(input: Tensor, other: Any, out_dtype: Any = None) -> Any:
    """floor_divide's body: NotImplemented when other is no tensor or number."""
    operands = _quotient_operands(input, other)
    if operands is None:
        return NotImplemented
    ad, bd = operands
    try:
        out = _rounded_quotient(input._backend, ad, bd, "floor")
    except ValueError as e:
        raise broadcast_error(e, ad.shape, getattr(bd, "shape", ())) from None
    if out_dtype is not None:
        check_inplace_cast(input, _dtype.from_np(out.dtype))
        out = out.astype(out_dtype, copy=False)
    # torch has no derivative for floor_divide: its node raises at backward
    return NOT_IMPLEMENTED.record(out, (input, other if isinstance(other, Tensor) else None),
                                  "floor_divide")


def _floor_divide_invalid(input: Any, other: Any) -> TypeError:
    return TypeError(
        f"floor_divide() received an invalid combination of arguments - got "
        f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Tensor input, Number other)\n")


@op(method="floor_divide", function="floor_divide", grad_fn="torch::autograd::NotImplemented",
    number_first=lambda n, o: _wrapped(floor_divide)(n, o))
def floor_divide(input: Tensor, other: Any) -> Tensor:
    """input / other rounded down, elementwise, broadcast (integer dtypes stay integral).

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor, broadcast with input.

    torch has no derivative for it: backward through it raises, as torch's. Integer division by
    zero is an error; float division by zero gives inf or NaN. `//` is the same op.

    Example::

        >>> rustgrad.floor_divide(rustgrad.tensor([7, -7]), 2)
        tensor([ 3, -4])
        >>> rustgrad.tensor([7.5, -7.5]) // 2
        tensor([ 3., -4.])
    """
    if not isinstance(input, Tensor):
        raise _floor_divide_invalid(input, other)
    out = _floor_divide(input, other)
    if out is NotImplemented:
        raise _floor_divide_invalid(input, other)
    return out


@op(dunder="__floordiv__", grad_fn="torch::autograd::NotImplemented")
def floordiv(input: Tensor, other: Any) -> Any:
    """input // other: floor_divide."""
    return _floor_divide(input, other)


@op(dunder="__rfloordiv__", grad_fn="torch::autograd::NotImplemented")
def rfloordiv(input: Tensor, other: Any) -> Any:
    """other // input, for a number on the left."""
    s = as_scalar(other)
    if s is None:
        return NotImplemented
    rt = _dtype.result_type(input, s).np
    xp = input._backend
    ad = xp.full(input._data.shape, _int_operand(input._data.astype(rt, copy=False), s), dtype=rt)
    out = _rounded_quotient(xp, ad, input._data.astype(rt, copy=False), "floor")
    return NOT_IMPLEMENTED.record(out, (input,), "floor_divide")


@op(method="floor_divide_", dunder="__ifloordiv__", grad_fn="torch::autograd::NotImplemented")
def floor_divide_(self: Tensor, other: Any) -> Tensor:
    """floor_divide written into self.

    Args:
        other (Tensor or Number): the divisor, broadcast to self's shape.
    """
    if not isinstance(other, Tensor) and as_scalar(other) is None:
        raise TypeError(f"floor_divide_(): argument 'other' (position 1) must be Tensor or "
                        f"Number, not {type(other).__name__}")
    check_inplace_cast(self, _dtype.result_type(self, other))
    dt = self._data.dtype
    return inplace_from(self, lambda src: _floor_divide(src, other, dt), False, other)


def _remainder_scalar_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g, None


REMAINDER_SCALAR = node("RemainderBackward0", _remainder_scalar_bw, forward=ELEMENTWISE)


def _remainder_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return g, (-g * a.div(b, rounding_mode="floor") if b.requires_grad else None)


REMAINDER_TENSOR = node("RemainderBackward1", _remainder_tensor_bw, saved=("self", "other"), forward=ELEMENTWISE)


@op(method="remainder", dunder="__mod__", function="remainder",
    grad_fn=("RemainderBackward0", "RemainderBackward1"))
def remainder(input: Tensor, other: Any) -> Tensor:
    """The remainder of input / other with the sign of other (Python's %), elementwise.

    Args:
        input (Tensor or Number): the dividend.
        other (Tensor or Number): the divisor, broadcast with input.

    See fmod for the remainder with the sign of the dividend.

    Example::

        >>> rustgrad.tensor([-3, 3]) % 2
        tensor([1, 1])
        >>> rustgrad.remainder(rustgrad.tensor([-3., 3.]), -2)
        tensor([-1., -1.])
    """
    xp = input._backend
    if isinstance(other, Tensor):
        ad, bd = promote(input, other)
        if ad.dtype.kind in "iu" and bool((bd == 0).any()):
            raise RuntimeError("ZeroDivisionError")
        with quiet_fp(xp):
            try:
                out = xp.remainder(ad, bd)
            except ValueError as e:
                raise broadcast_error(e, ad.shape, bd.shape) from None
        return REMAINDER_TENSOR.record(out, (input, other), self=input, other=other)
    s = as_scalar(other)
    if s is None:
        return NotImplemented
    ad = scalar_operand(input._data, s)
    if ad.dtype.kind in "iub" and type(s) is not float and s == 0:
        raise RuntimeError("ZeroDivisionError")
    with quiet_fp(xp):
        out = xp.remainder(ad, _int_operand(ad, s))
    return REMAINDER_SCALAR.record(out, (input, None))


# ---- pow -------------------------------------------------------------------------------
def _power(ad: Any, s: Any, xp: Any) -> Any:
    """ad ** s for a Python scalar s, NaN and inf computed silently as torch's. Exponents 2, 3,
    -1 and -2 on float32/float64 are products, as torch's pow kernel computes them, and 0.5 is
    sqrt (bit for bit; NumPy's power takes ~40x longer on 3 and -2)."""
    if ad.dtype.kind == "f" and ad.dtype.itemsize >= 4 and type(s) in (int, float):
        if s in (2, 3, -1, -2):
            kernel = xp.kernels.powi
            out = None if kernel is None else kernel(ad, int(s))
            if out is not None:
                return out
        elif s == 0.5 and xp.kernels.unary is not None:
            out = xp.kernels.unary(ad, "sqrt")
            if out is not None:
                return out
    with quiet_fp(xp):
        if ad.dtype.kind == "f" and type(s) in (int, float) and s in (3, -2):
            return ad * ad * ad if s == 3 else 1 / (ad * ad)
        return ad**s


def _pow_scalar_bw(g: Tensor, saved: Any, e: Any) -> Any:
    if e == 0:
        return g * 0
    return g * (e * saved.self ** (e - 1))


POW_SCALAR = node("PowBackward0", _pow_scalar_bw, saved=("self",),
                  getters={"exponent": lambda s, c: c}, forward=ELEMENTWISE)


def _pow_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b, out = saved
    ga = gb = None
    if a.requires_grad:
        # torch's pow_backward_self: zero where the exponent is 0 (not 0 * 0 ** -1 = nan)
        ga = where(b == 0, 0.0, g * (b * a ** (b - 1)))
    if b.requires_grad:
        zero = (a == 0) & (b >= 0)
        gb = g * where(zero, 0.0, out * a.log())
    return ga, gb


POW_TENSOR = node("PowBackward1", _pow_tensor_bw, saved=("self", "exponent"), result=True, forward=ELEMENTWISE)


def _rpow_bw(g: Tensor, saved: Any, base: Any) -> Any:
    if base == 0:  # torch's pow_backward_exponent: 0 where exponent >= 0, else result * log(0)
        return g * where(saved.exponent >= 0, 0.0, saved.result * -math.inf)
    return g * (saved.result * math.log(base))


RPOW = node("PowBackward2", _rpow_bw, saved=("exponent",), result=True,
            getters={"self": lambda s, c: c}, forward=ELEMENTWISE)


@op(method="pow", dunder="__pow__", function="pow",
    grad_fn=("PowBackward0", "PowBackward1", "PowBackward2"),
    number_first=lambda n, e: _number_base(n, e), autocast=dict(cuda="fp32"))
def pow(input: Tensor, exponent: Any, *, _out_dtype: Any = None) -> Tensor:
    """input ** exponent, elementwise, broadcast, with torch's type promotion.

    Args:
        input (Tensor or Number): the base.
        exponent (Tensor or Number): the exponent, broadcast with input.

    The base's gradient is exponent * input ** (exponent - 1); the exponent's is
    input ** exponent * log(input).

    Example::

        >>> rustgrad.tensor([1., 2., 3.]) ** 2
        tensor([1., 4., 9.])
        >>> 2 ** rustgrad.tensor([0, 1, 3])
        tensor([1, 2, 8])
        >>> rustgrad.pow(rustgrad.tensor([4.]), 0.5)
        tensor([2.])
    """
    if isinstance(exponent, Tensor):
        ad, bd = promote(input, exponent)
        try:
            out = ad**bd
        except ValueError as e:
            raise broadcast_error(e, ad.shape, bd.shape) from None
        if _out_dtype is not None:
            out = out.astype(_out_dtype, copy=False)
        return POW_TENSOR.record(out, (input, exponent), self=input, exponent=exponent)
    s = as_scalar(exponent)
    if s is None:
        return NotImplemented
    ad = scalar_operand(input._data, s)
    if type(s) is int and not -(1 << 63) <= s < (1 << 63):
        raise RuntimeError("value cannot be converted to type int64_t without overflow")
    _check_int_fits(ad.dtype, s)
    if ad.dtype.kind in "iu" and type(s) is int and s < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return POW_SCALAR.record(_power(ad, s, input._backend), (input,), s, self=input)


@op(dunder="__rpow__", grad_fn="PowBackward2", autocast=dict(cuda="fp32"))
def rpow(input: Tensor, other: Any) -> Tensor:
    """b ** a for a Python scalar b (torch's PowBackward2)."""
    s = as_scalar(other)
    if s is None:
        return NotImplemented
    ad = input._data
    if ad.dtype.kind in "biu" and type(s) is float:
        ad = ad.astype(_dtype.get_default_dtype().np)
    return RPOW.record(s**ad, (input,), s, exponent=input if s == 0 else None)


# ---- in-place --------------------------------------------------------------------------
def _inplace(self: Tensor, other: Any, ufunc: Any, out_of_place: Any, operand: Any = None,
             **kw: Any) -> Tensor:
    """Runs an in-place op: refuses what torch refuses, writes into self's array, bumps the
    version, and with grad gives self the out-of-place op's history (rebase). `operand` is the
    tensor the caller was given when `other` was computed from it (other * alpha)."""
    if not isinstance(self, Tensor):
        raise TypeError("in-place op on a non-tensor")
    other_t = isinstance(other, Tensor)
    if is_grad_enabled() and (self.requires_grad or (other_t and other.requires_grad)):
        check_inplace(self)
        result = _dtype.result_type(self, other)
        check_inplace_cast(self, result)
        if other_t and result.np != self._data.dtype:
            # torch computes in the promoted dtype and writes self's: one node, no ToCopy
            kw["_out_dtype"] = self._data.dtype
        # mul, div and pow's backward reads self as it was before the write
        reads_self = out_of_place is mul or out_of_place is div or out_of_place is pow
        return inplace_from(self, lambda src: out_of_place(src, other, **kw), reads_self,
                            other if operand is None else operand, cast=True)
    # without autograd: the ufunc writes into self's array (the optimizers' path)
    check_inplace(self)
    check_internal_overlap(self)
    check_no_partial_overlap(self, other if operand is None else operand)
    check_inplace_cast(self, _dtype.result_type(self, other))
    sd = self._data
    od = other._data if other_t else _int_operand(sd, other)
    if other_t:
        namespace_of(sd)
        same_device(sd, od)  # by device: cuda:0 against cuda:1 too
        shape = _broadcast_shape(sd.shape, od.shape)
        if shape != sd.shape:
            raise RuntimeError(
                f"output with shape {list(sd.shape)} doesn't match the broadcast shape {list(shape)}"
            )
    ufunc(sd, od, out=sd, casting="unsafe")
    self._bump_version()
    return self


def _check_int_fits(dt: Any, v: Any) -> None:
    """torch's refusal of an int (alpha, an exponent) that an integer dtype cannot hold."""
    if type(v) is int and dt.kind in "iu" and wrap_int(dt, v) != v:
        raise RuntimeError(
            f"value cannot be converted to type {_dtype.C_INT_NAMES[dt.name]} without overflow"
        )


def _int_operand(ad: Any, s: Any) -> Any:
    """A Python int operand of an integer array, wrapped to its dtype as torch's."""
    if type(s) is int and ad.dtype.kind in "iu":
        return wrap_int(ad.dtype, s)
    return s


def _scaled(ad: Any, s: Any, alpha: Any) -> Any:
    """alpha * s for a scalar operand s of array ad; for an integer array, computed as torch
    does in the array's dtype (s wrapped, then the product wrapped)."""
    s = _int_operand(ad, s)
    if alpha == 1 or type(s) is not int or ad.dtype.kind not in "iu":
        return s if alpha == 1 else s * alpha
    return wrap_int(ad.dtype, s * alpha, True)


def _broadcast_shape(a: Any, b: Any) -> Any:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                "non-singleton dimension"
            )
        out.append(max(x, y) if x != 0 and y != 0 else 0)
    return tuple(out)


@op(method="add_", dunder="__iadd__")
def add_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """In-place self += alpha * other.

    Args:
        other (Tensor or Number): the operand, broadcast to self's shape.
        alpha (Number, optional): keyword-only; the multiplier for other. Default: 1.

    The result must keep self's dtype (adding a float to an integer tensor is refused).

    Example::

        >>> x = rustgrad.tensor([1., 2.])
        >>> x.add_(rustgrad.tensor([1., 1.]), alpha=10)
        tensor([11., 12.])
    """
    xp = self._backend
    given = other
    if alpha != 1:
        _check_int_fits(self._data.dtype, alpha)
        other = other * alpha if isinstance(other, Tensor) else _scaled(self._data, other, alpha)
    return _inplace(self, other, xp.add, add, given)


@op(method=("sub_", "subtract_"), dunder="__isub__")
def sub_(self: Tensor, other: Any, *, alpha: Any = 1) -> Tensor:
    """In-place self -= alpha * other."""
    _check_sub_bool(self, other)
    xp = self._backend
    given = other
    if alpha != 1:
        _check_int_fits(self._data.dtype, alpha)
        other = other * alpha if isinstance(other, Tensor) else _scaled(self._data, other, alpha)
    return _inplace(self, other, xp.subtract, sub, given)


@op(method=("mul_", "multiply_"), dunder="__imul__")
def mul_(self: Tensor, other: Any) -> Tensor:
    """In-place self *= other.

    Args:
        other (Tensor or Number): the factor, broadcast to self's shape.

    Example::

        >>> x = rustgrad.tensor([1., 2.])
        >>> x.mul_(3)
        tensor([3., 6.])
    """
    return _inplace(self, other, self._backend.multiply, mul)


@op(method=("div_", "divide_", "true_divide_"), dunder="__itruediv__")
def div_(self: Tensor, other: Any, *, rounding_mode: Any = None) -> Tensor:
    """In-place self /= other (true division, or rounded as div's rounding_mode says).

    Args:
        other (Tensor or Number): the divisor, broadcast to self's shape.
        rounding_mode (str, optional): keyword-only; None, "trunc" or "floor", as div's.

    Example::

        >>> x = rustgrad.tensor([7, -7])
        >>> x.div_(2, rounding_mode="floor")
        tensor([ 3, -4])
    """
    if rounding_mode is not None:
        if not isinstance(other, Tensor) and as_scalar(other) is None:
            raise TypeError(f"div_(): argument 'other' (position 1) must be Tensor or Number, "
                            f"not {type(other).__name__}")
        check_inplace_cast(self, _dtype.result_type(self, other))
        dt = self._data.dtype
        return inplace_from(self, lambda src: _div_rounding(src, other, rounding_mode, dt),
                            False, other)
    if not _dtype.is_floating_np(self._data.dtype):
        raise RuntimeError(
            "result type Float can't be cast to the desired output type "
            f"{_type_name(self.dtype)}"
        )
    return _inplace(self, other, self._backend.true_divide, div)


@op(method="pow_", dunder="__ipow__")
def pow_(self: Tensor, other: Any) -> Tensor:
    """In-place self **= other."""
    return _inplace(self, other, self._backend.power, pow)


# ---- a Python number first (torch.add(2., x)): a wrapped 0-d tensor on the other's device ----
def _wrapped(op_fn: Any) -> Any:
    def number_first(number: Any, other: Any, *args: Any, **kwargs: Any) -> Tensor:
        # two numbers are two wrapped 0-d tensors, as torch's (torch.add(2, 3) is tensor(5))
        device = other.device if isinstance(other, Tensor) else None
        return op_fn(_creation.tensor(number, device=device), other, *args, **kwargs)

    return number_first


def _number_base(number: Any, exponent: Any) -> Tensor:
    """torch.pow(2, x): pow(Scalar, Tensor), PowBackward2; torch refuses two numbers."""
    if not isinstance(exponent, Tensor):
        raise TypeError(
            f"pow() received an invalid combination of arguments - got ({type(number).__name__}, "
            f"{type(exponent).__name__}), but expected one of:\n"
            " * (Tensor input, Tensor exponent, *, Tensor out = None)\n"
            " * (Number self, Tensor exponent, *, Tensor out = None)\n"
            " * (Tensor input, Number exponent, *, Tensor out = None)\n")
    return rpow(exponent, number)


# ---- addcmul / addcdiv -----------------------------------------------------------------------
def _addcmul_bw(g: Tensor, saved: Any, value: Any) -> Any:
    return g, g * saved.tensor2 * value, g * saved.tensor1 * value


def _addcdiv_bw(g: Tensor, saved: Any, value: Any) -> Any:
    t1, t2 = saved
    return g, g * value / t2, -g * value * t1 / (t2 * t2)


_VALUE = {"value": lambda s, c: c}
ADDCMUL = node("AddcmulBackward0", _addcmul_bw, saved=("tensor1", "tensor2"), getters=_VALUE, forward=ELEMENTWISE)
ADDCDIV = node("AddcdivBackward0", _addcdiv_bw, saved=("tensor1", "tensor2"), getters=_VALUE, forward=ELEMENTWISE)


def _addc(kind: str, input: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    a, b, c = input._data, tensor1._data, tensor2._data
    same_device(a, b)
    same_device(a, c)
    rt = _dtype.result_type(_dtype.result_type(input, tensor1), tensor2).np
    if kind == "div" and rt.kind in "biu":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))."
            "to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    # bfloat16: one fused expression in float32, rounded once, as torch's kernel
    a, b, c = (opmath(x.astype(rt, copy=False)) for x in (a, b, c))
    try:
        out = a + value * (b * c if kind == "mul" else b / c)
    except ValueError as e:
        raise broadcast_error(e, a.shape, b.shape, c.shape) from None
    out = out.astype(rt, copy=False)
    spec = ADDCMUL if kind == "mul" else ADDCDIV
    return spec.record(out, (input, tensor1, tensor2), value, tensor1=tensor1, tensor2=tensor2)


@op(method="addcmul", function="addcmul", grad_fn="AddcmulBackward0", autocast=dict(cuda="promote"))
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 * tensor2, elementwise.

    Args:
        input (Tensor): the tensor added to.
        tensor1 (Tensor): the first factor.
        tensor2 (Tensor): the second factor.
        value (Number, optional): keyword-only; the multiplier. Default: 1.

    Example::

        >>> rustgrad.addcmul(rustgrad.tensor([1., 1.]), rustgrad.tensor([2., 3.]), rustgrad.tensor([4., 5.]), value=0.5)
        tensor([5.0000, 8.5000])
    """
    return _addc("mul", input, tensor1, tensor2, value)


@op(method="addcdiv", function="addcdiv", grad_fn="AddcdivBackward0", autocast=dict(cuda="promote"))
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """input + value * tensor1 / tensor2, elementwise.

    Args:
        input (Tensor): the tensor added to.
        tensor1 (Tensor): the numerator.
        tensor2 (Tensor): the denominator.
        value (Number, optional): keyword-only; the multiplier. Default: 1.

    Example::

        >>> rustgrad.addcdiv(rustgrad.tensor([1., 1.]), rustgrad.tensor([2., 3.]), rustgrad.tensor([4., 6.]), value=2)
        tensor([2., 2.])
    """
    return _addc("div", input, tensor1, tensor2, value)


# ---- addcmul_ / addcdiv_ -------------------------------------------------------------------
def _addc_(kind: str, self: Tensor, tensor1: Tensor, tensor2: Tensor, value: Any) -> Tensor:
    return inplace_from(self, lambda src: _addc(kind, src, tensor1, tensor2, value), False,
                        tensor1, tensor2, cast=True)


@op(method="addcmul_", grad_fn="AddcmulBackward0")
def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """self += value * tensor1 * tensor2."""
    return _addc_("mul", self, tensor1, tensor2, value)


@op(method="addcdiv_", grad_fn="AddcdivBackward0")
def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """self += value * tensor1 / tensor2."""
    return _addc_("div", self, tensor1, tensor2, value)
