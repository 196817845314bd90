"""Pointwise ops: exp, log, sqrt, abs, sign, tanh, reciprocal, clamp; trigonometric and
hyperbolic functions, exp2/expm1/log2/log10/log1p, rsqrt, square, rounding (zero gradient), erf,
lerp, fmod, atan2, the floating-point tests (isnan/isinf/isfinite), the logical ops, the
in-place forms (exp_, sigmoid_, tanh_, sqrt_, abs_, neg_, square_, relu_) and nan_to_num.

Backward formulas are torch's (derivatives.yaml), written in rustgrad ops so that double
backward works."""

from __future__ import annotations

import math
from typing import Any

from .. import _core, _creation, _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import (
    _type_name,
    as_scalar,
    broadcast_error,
    cast_grad,
    check_inplace,
    check_inplace_cast,
    check_internal_overlap,
    check_no_partial_overlap,
    checked_int,
    floating,
    is_grad_enabled,
    name_function,
    promote,
    quiet_fp,
    record,
    same_device,
    scalar_operand,
    sum_to,
)
from ._util import (
    const as _const,
)
from .compare import where
from .copyslices import commit_inplace, write_inplace

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ---- helpers ---------------------------------------------------------------------------


def _unary(a: Tensor, fn: Any, name: str, bw: Any, save: str) -> Tensor:
    """out = fn(xp, float array of a); save: 'in' saves the input, 'out' the output."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{name[:-9].lower()}(): argument 'input' must be Tensor, not "
                        f"{type(a).__name__}")
    xp = a._backend
    with quiet_fp(xp):
        out = fn(xp, floating(a))
    if save == "out":
        return record(out, (a,), name, bw, (), None, True)
    return record(out, (a,), name, bw, (a,))


def _binary_grads(ga: Any, gb: Any, ctx: Any) -> Any:
    """Reduces broadcast gradients to the inputs' shapes and dtypes."""
    ash, adt, bsh, bdt = ctx
    ga = None if ga is None else cast_grad(sum_to(ga, ash), adt)
    gb = None if gb is None else cast_grad(sum_to(gb, bsh), bdt)
    return ga, gb


def _meta(a: Tensor, b: Tensor) -> Any:
    return (a._data.shape, a._data.dtype, b._data.shape, b._data.dtype)


# ---- exp, log, sqrt, abs, sign, tanh, reciprocal -----------------------------------------
# torch's `_saved_result` / `_saved_self` of a node that saves one tensor
_SAVED_RESULT = {"result": lambda s, c: s[0]}
_SAVED_SELF = {"self": lambda s, c: s[0]}


def _exp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * out


@op(method="exp", function="exp", grad_fn="ExpBackward0",
    saved={"ExpBackward0": _SAVED_RESULT})
def exp(input: Tensor) -> Tensor:
    """e to the power input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is the result itself, exp(input).

    Example::

        >>> rustgrad.tensor([0., 1.]).exp()
        tensor([1.0000, 2.7183])
    """
    return record(input._backend.exp(floating(input)), (input,), "ExpBackward0", _exp_bw, (),
                  None, True)


def _log_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g / a


@op(method="log", function="log", grad_fn="LogBackward0",
    saved={"LogBackward0": _SAVED_SELF})
def log(input: Tensor) -> Tensor:
    """The natural logarithm of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Negative entries give NaN and 0 gives -inf; the gradient is 1 / input (inf at 0).

    Example::

        >>> rustgrad.tensor([1., 0.5]).log()
        tensor([ 0.0000, -0.6931])
    """
    return record(input._backend.log(floating(input)), (input,), "LogBackward0", _log_bw,
                  (input,))


def _sqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g / (2 * out)


@op(method="sqrt", function="sqrt", grad_fn="SqrtBackward0",
    saved={"SqrtBackward0": _SAVED_RESULT})
def sqrt(input: Tensor) -> Tensor:
    """The square root of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 / (2 sqrt(input)): infinite at 0, NaN for negative entries.

    Example::

        >>> rustgrad.tensor([1., 4.]).sqrt()
        tensor([1., 2.])
        >>> x = rustgrad.tensor([0., 4.], requires_grad=True)
        >>> x.sqrt().sum().backward()
        >>> x.grad
        tensor([   inf, 0.2500])
    """
    return record(input._backend.sqrt(floating(input)), (input,), "SqrtBackward0", _sqrt_bw,
                  (), None, True)


def _abs_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * a.sign()


@op(method="abs", dunder="__abs__", function="abs", grad_fn="AbsBackward0",
    saved={"AbsBackward0": _SAVED_SELF})
def abs(input: Tensor) -> Tensor:  # noqa: A001  (torch's name)
    """The absolute value of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is sign(input), so an entry at exactly 0 gets gradient 0.

    Example::

        >>> x = rustgrad.tensor([-2., 0., 3.], requires_grad=True)
        >>> x.abs()
        tensor([2., 0., 3.], grad_fn=<AbsBackward0>)
        >>> x.abs().sum().backward()
        >>> x.grad
        tensor([-1.,  0.,  1.])
    """
    return record(input._backend.abs(input._data), (input,), "AbsBackward0", _abs_bw, (input,))


def _sign_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's zeros_like(grad): a constant, whatever g holds (NaN included)
    return _const(g._backend.zeros_like(g._data))


@op(method="sign", function="sign", grad_fn="SignBackward0")
def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of input, elementwise (0 for NaN, as torch's).

    Args:
        input (Tensor): the input tensor.

    The gradient is zero everywhere.

    Example::

        >>> rustgrad.tensor([-3., 0., 2.]).sign()
        tensor([-1.,  0.,  1.])
    """
    d = input._data
    if d.dtype.kind == "b":
        out = d.copy()
    else:
        out = input._backend.sign(d)
        if _dtype.is_floating_np(d.dtype):  # torch's sign(nan) is 0, NumPy's nan
            out = input._backend.nan_to_num(out, nan=0.0)
    return record(out, (input,), "SignBackward0", _sign_bw)


def _tanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (1 - out * out)


@op(method="tanh", function="tanh", functional="tanh", grad_fn="TanhBackward0",
    saved={"TanhBackward0": _SAVED_RESULT})
def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 - tanh(input)^2, computed from the saved result.

    Example::

        >>> rustgrad.tensor([0., 1.]).tanh()
        tensor([0.0000, 0.7616])
    """
    return record(input._backend.tanh(floating(input)), (input,), "TanhBackward0", _tanh_bw, (),
                  None, True)


def _reciprocal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return -g * out * out


@op(method="reciprocal", function="reciprocal", grad_fn="ReciprocalBackward0",
    saved={"ReciprocalBackward0": _SAVED_RESULT})
def reciprocal(input: Tensor) -> Tensor:
    """1 / input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Integer and bool inputs give float32. The gradient is -1 / input^2.

    Example::

        >>> rustgrad.tensor([2., 4.]).reciprocal()
        tensor([0.5000, 0.2500])
    """
    d = floating(input)
    return record(1 / d, (input,), "ReciprocalBackward0", _reciprocal_bw, (), None, True)


# ---- clamp -----------------------------------------------------------------------------
def _clamp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15: a value sitting on a bound gets no gradient (the bounds are strict); a
    # selection, so that a NaN in g does not leak where the input was clamped
    (a,) = saved
    lo, hi = ctx
    mask = None
    if lo is not None:
        mask = a > lo
    if hi is not None:
        m = a < hi
        mask = m if mask is None else mask & m
    return where(mask, g, 0.0)


def _int_bounds(np_dt: Any, lo: Any, hi: Any) -> Any:
    """torch's range check of int bounds on an integer tensor: a min above the dtype's range or a
    max below it is an error; a bound on the far side of the range clamps nothing."""
    if np_dt.kind not in "iu":
        return lo, hi
    bits = np_dt.itemsize * 8
    low = 0 if np_dt.kind == "u" else -(1 << (bits - 1))
    high = (1 << bits) - 1 if np_dt.kind == "u" else (1 << (bits - 1)) - 1
    name = _dtype.scalar_type_name(_dtype.from_np(np_dt))
    def fits(v: Any) -> bool:  # a Python int torch converts to a C integer at all
        return type(v) is int and -(1 << 63) <= v < (1 << 64)

    for which, v in (("min", lo), ("max", hi)):
        if fits(v) and ((v > high) if which == "min" else (v < low)):
            raise RuntimeError(f"Clamp {which} value {v:g} is outside the representable range "
                               f"of {name}")
    return (low if fits(lo) and lo < low else lo), (high if fits(hi) and hi > high else hi)


def _clamp_array(a: Tensor, lo: Any, hi: Any) -> Any:
    xp = a._backend
    d = a._data
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if not _dtype.is_floating_np(d.dtype) and (type(lo) is float or type(hi) is float):
        d = d.astype(_dtype.get_default_dtype().np)  # int tensor, float bound: default float
    lo, hi = _int_bounds(d.dtype, lo, hi)
    out = d
    if lo is not None:
        out = xp.maximum(out, checked_int(d.dtype, lo))
    if hi is not None:
        out = xp.minimum(out, checked_int(d.dtype, hi))
    if out is a._data:
        out = out.copy()
    return out.astype(d.dtype, copy=False)


# torch names the C type in clamp_'s scalar-bound cast error ("... output type long int")
_C_TYPE_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "bool": "bool"}


@op(method=("clamp", "clip"), function=("clamp", "clip"), grad_fn=("ClampBackward0", "ClampBackward1"))
def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002  (torch's names)
    """input limited to [min, max] (either bound may be None, a number or a tensor).

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor, optional): the lower bound.
        max (Number or Tensor, optional): the upper bound.

    Where min > max every entry becomes max. The gradient passes (1) strictly inside
    (min, max) and is 0 where an entry was clipped or sits exactly on a bound, as torch's.
    `clip` is the same op.

    Example::

        >>> x = rustgrad.tensor([-2., 0., 1., 3.], requires_grad=True)
        >>> x.clamp(0., 1.)
        tensor([0., 0., 1., 1.], grad_fn=<ClampBackward1>)
        >>> x.clamp(0., 1.).sum().backward()
        >>> x.grad
        tensor([0., 0., 0., 0.])
    """
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max)
    lo = None if min is None else as_scalar(min)
    hi = None if max is None else as_scalar(max)
    out = _clamp_array(input, lo, hi)
    return record(out, (input,), "ClampBackward1", _clamp_bw, (input,), (lo, hi))


def _clamp_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15's clamp_backward_min_max: a tie between the input and a bound splits the
    # gradient in halves; a NaN input passes its gradient through
    a, lo, hi = saved
    zero = 0.0  # selected, never multiplied: a NaN in g must not leak
    half = g * 0.5
    if lo is not None and hi is not None:
        lt, le = lo < hi, lo <= hi
        ga = where((a < lo) | (a > hi), zero, where(((a == lo) | (a == hi)) & lt, half, g))
        glo = where(le & (a < lo), g, where(lt & (a == lo), half, zero))
        ghi = where((hi < lo) | (le & (a > hi)), g, where(lt & (a == hi), half, zero))
    elif lo is not None:
        tie = a == lo
        ga = where(a < lo, zero, where(tie, half, g))
        glo, ghi = where(a > lo, zero, where(tie, half, g)), None
    else:
        tie = a == hi
        ga = where(a > hi, zero, where(tie, half, g))
        glo, ghi = None, where(a < hi, zero, where(tie, half, g))
    out = []
    for grad, (shape, dt) in zip((ga, glo, ghi), ctx):
        if shape is not None:
            out.append(cast_grad(sum_to(grad, shape), dt))
    return tuple(out)


def _clamp_tensor(a: Tensor, lo: Any, hi: Any) -> Tensor:
    for x in (lo, hi):
        if x is not None and not isinstance(x, Tensor):
            raise TypeError(
                "clamp() received an invalid combination of arguments - got (Tensor, "
                f"{type(lo).__name__ if lo is not None else 'NoneType'}, "
                f"{type(hi).__name__ if hi is not None else 'NoneType'}), but expected one of:\n"
                " * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n"
                " * (Tensor input, Number min = None, Number max = None, *, Tensor out = None)"
            )

    present = [x for x in (a, lo, hi) if x is not None]
    rt = _dtype.result_type(*present).np
    xp = a._backend
    out = a._data.astype(rt, copy=False)
    try:
        if lo is not None:
            same_device(a._data, lo._data)
            out = xp.maximum(out, lo._data.astype(rt, copy=False))
        if hi is not None:
            same_device(a._data, hi._data)
            out = xp.minimum(out, hi._data.astype(rt, copy=False))
    except ValueError as e:
        raise broadcast_error(e, *(x._data.shape for x in present)) from None
    if out is a._data:
        out = out.copy()
    ctx = tuple((x._data.shape, x._data.dtype) if x is not None else (None, None)
                for x in (a, lo, hi))
    return record(out, tuple(present), "ClampBackward0", _clamp_tensor_bw, (a, lo, hi), ctx)


@op(method=("clamp_", "clip_"))
def clamp_(self: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002
    """clamp written into self.

    Args:
        min (Number or Tensor, optional): the lower bound.
        max (Number or Tensor, optional): the upper bound.

    Example::

        >>> x = rustgrad.tensor([-2., 0.5, 3.])
        >>> x.clamp_(min=0.)
        tensor([0.0000, 0.5000, 3.0000])
        >>> x
        tensor([0.0000, 0.5000, 3.0000])
    """
    check_inplace(self)
    check_internal_overlap(self)
    check_no_partial_overlap(self, min)
    check_no_partial_overlap(self, max)
    if not _dtype.is_floating_np(self._data.dtype):
        bounds = [x for x in (min, max) if x is not None]
        if any(type(x) is float for x in bounds):
            raise RuntimeError(
                "result type Float can't be cast to the desired output type "
                f"{_C_TYPE_NAMES.get(self.dtype.name, self.dtype.name)}"
            )
        if bounds and any(isinstance(x, Tensor) for x in bounds):
            check_inplace_cast(self, _dtype.result_type(self, *bounds))
    tensor_bound = isinstance(min, Tensor) and min.requires_grad or \
        isinstance(max, Tensor) and max.requires_grad
    if is_grad_enabled() and (self.requires_grad or tensor_bound):
        # the backward needs self as it was before the write: save self copy with its history
        out = clamp(_core.shallow_copy(self, self._data.copy()), min, max)
        commit_inplace(self, out)
        return self
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        res = _clamp_tensor(self, min, max)._data
        if res.shape != self._data.shape:
            raise RuntimeError(
                f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
                f"{list(res.shape)}"
            )
    else:
        lo = None if min is None else as_scalar(min)
        hi = None if max is None else as_scalar(max)
        res = _clamp_array(self, lo, hi)
    self._data[...] = res
    self._bump_version()
    return self


# ---- trigonometric and hyperbolic ------------------------------------------------------
def _sin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * saved[0].cos()


@op(method="sin", function="sin", grad_fn="SinBackward0")
def sin(input: Tensor) -> Tensor:
    """The sine of input (radians), elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is cos(input).

    Example::

        >>> rustgrad.tensor([0., 1.5707963]).sin()
        tensor([0., 1.])
    """
    return _unary(input, lambda xp, d: xp.sin(d), "SinBackward0", _sin_bw, "in")


def _cos_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * -saved[0].sin()


@op(method="cos", function="cos", grad_fn="CosBackward0")
def cos(input: Tensor) -> Tensor:
    """The cosine of input (radians), elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is -sin(input).

    Example::

        >>> rustgrad.tensor([0., 3.1415927]).cos()
        tensor([ 1., -1.])
    """
    return _unary(input, lambda xp, d: xp.cos(d), "CosBackward0", _cos_bw, "in")


def _tan_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (1 + out * out)


@op(method="tan", function="tan", grad_fn="TanBackward0")
def tan(input: Tensor) -> Tensor:
    """The tangent of input (radians), elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 + tan(input)^2.

    Example::

        >>> rustgrad.tensor([0., 0.7853982]).tan()
        tensor([0., 1.])
    """
    return _unary(input, lambda xp, d: xp.tan(d), "TanBackward0", _tan_bw, "out")


def _asin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * rsqrt(-a * a + 1)


@op(method=("arcsin", "asin"), function=("arcsin", "asin"), grad_fn="AsinBackward0")
def asin(input: Tensor) -> Tensor:
    """The arcsine of input, elementwise (NaN outside [-1, 1]).

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 / sqrt(1 - input^2), infinite at -1 and 1.

    Example::

        >>> rustgrad.tensor([0., 1.]).asin()
        tensor([0.0000, 1.5708])
    """
    return _unary(input, lambda xp, d: xp.arcsin(d), "AsinBackward0", _asin_bw, "in")


def _acos_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * -rsqrt(-a * a + 1)


@op(method=("acos", "arccos"), function=("acos", "arccos"), grad_fn="AcosBackward0")
def acos(input: Tensor) -> Tensor:
    """The arccosine of input, elementwise (NaN outside [-1, 1]).

    Args:
        input (Tensor): the input tensor.

    The gradient is -1 / sqrt(1 - input^2), infinite at -1 and 1.

    Example::

        >>> rustgrad.tensor([1., 0.]).acos()
        tensor([0.0000, 1.5708])
    """
    return _unary(input, lambda xp, d: xp.arccos(d), "AcosBackward0", _acos_bw, "in")


def _atan_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g / (a * a + 1)


@op(method=("arctan", "atan"), function=("arctan", "atan"), grad_fn="AtanBackward0")
def atan(input: Tensor) -> Tensor:
    """The arctangent of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 / (1 + input^2).

    Example::

        >>> rustgrad.tensor([0., 1.]).atan()
        tensor([0.0000, 0.7854])
    """
    return _unary(input, lambda xp, d: xp.arctan(d), "AtanBackward0", _atan_bw, "in")


def _sinh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * cosh(saved[0])


@op(method="sinh", function="sinh", grad_fn="SinhBackward0")
def sinh(input: Tensor) -> Tensor:
    """The hyperbolic sine of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([0., 1.]).sinh()
        tensor([0.0000, 1.1752])
    """
    return _unary(input, lambda xp, d: xp.sinh(d), "SinhBackward0", _sinh_bw, "in")


def _cosh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * sinh(saved[0])


@op(method="cosh", function="cosh", grad_fn="CoshBackward0")
def cosh(input: Tensor) -> Tensor:
    """The hyperbolic cosine of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([0., 1.]).cosh()
        tensor([1.0000, 1.5431])
    """
    return _unary(input, lambda xp, d: xp.cosh(d), "CoshBackward0", _cosh_bw, "in")


def _atan2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    recip = (a * a + b * b).reciprocal()
    return _binary_grads(g * b * recip, g * -a * recip, ctx)


@op(method=("arctan2", "atan2"), function=("arctan2", "atan2"), grad_fn="Atan2Backward0")
def atan2(input: Tensor, other: Tensor) -> Tensor:
    """The angle of the point (other, input), elementwise: arctan(input / other) by quadrant.

    Args:
        input (Tensor): the y coordinates.
        other (Tensor): the x coordinates (broadcast with input).

    Example::

        >>> rustgrad.atan2(rustgrad.tensor([1., 1.]), rustgrad.tensor([1., -1.]))
        tensor([0.7854, 2.3562])
    """
    if not isinstance(other, Tensor):
        raise TypeError(
            f"atan2(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}"
        )
    ad, bd = promote(input, other)
    if ad.dtype.kind in "biu":
        ft = _dtype.get_default_dtype().np
        ad, bd = ad.astype(ft), bd.astype(ft)
    xp = input._backend
    with quiet_fp(xp):
        out = xp.arctan2(ad, bd)
    return record(out, (input, other), "Atan2Backward0", _atan2_bw, (input, other),
                  _meta(input, other))


arctan2 = atan2
arcsin, arccos, arctan = asin, acos, atan


# ---- exponentials and logarithms -------------------------------------------------------
def _exp2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * (saved[0] * _LN2)


@op(method="exp2", function="exp2", grad_fn="Exp2Backward0")
def exp2(input: Tensor) -> Tensor:
    """2 to the power input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([0., 3.]).exp2()
        tensor([1., 8.])
    """
    return _unary(input, lambda xp, d: xp.exp2(d), "Exp2Backward0", _exp2_bw, "out")


def _expm1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * (saved[0] + 1)


@op(method="expm1", function="expm1", grad_fn="Expm1Backward0")
def expm1(input: Tensor) -> Tensor:
    """exp(input) - 1, elementwise, accurate near 0.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([0., 1e-10], dtype=rustgrad.float64).expm1()
        tensor([0.0000e+00, 1.0000e-10], dtype=torch.float64)
    """
    return _unary(input, lambda xp, d: xp.expm1(d), "Expm1Backward0", _expm1_bw, "out")


def _log2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] * _LN2)


@op(method="log2", function="log2", grad_fn="Log2Backward0")
def log2(input: Tensor) -> Tensor:
    """The base-2 logarithm of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([1., 8.]).log2()
        tensor([0., 3.])
    """
    return _unary(input, lambda xp, d: xp.log2(d), "Log2Backward0", _log2_bw, "in")


def _log10_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] * _LN10)


@op(method="log10", function="log10", grad_fn="Log10Backward0")
def log10(input: Tensor) -> Tensor:
    """The base-10 logarithm of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([1., 10.]).log10()
        tensor([0., 1.])
    """
    return _unary(input, lambda xp, d: xp.log10(d), "Log10Backward0", _log10_bw, "in")


def _log1p_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] + 1)


@op(method="log1p", function="log1p", grad_fn="Log1PBackward0")
def log1p(input: Tensor) -> Tensor:
    """log(1 + input), elementwise, accurate near 0.

    Args:
        input (Tensor): the input tensor.

    The gradient is 1 / (1 + input).

    Example::

        >>> rustgrad.tensor([0., 1e-10], dtype=rustgrad.float64).log1p()
        tensor([0.0000e+00, 1.0000e-10], dtype=torch.float64)
    """
    return _unary(input, lambda xp, d: xp.log1p(d), "Log1PBackward0", _log1p_bw, "in")


def _rsqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return -0.5 * g * out * out * out


@op(method="rsqrt", function="rsqrt", grad_fn="RsqrtBackward0")
def rsqrt(input: Tensor) -> Tensor:
    """1 / sqrt(input), elementwise.

    Args:
        input (Tensor): the input tensor.

    0 gives inf and negative entries NaN. The gradient is -0.5 input^(-3/2).

    Example::

        >>> rustgrad.tensor([1., 4.]).rsqrt()
        tensor([1.0000, 0.5000])
    """
    return _unary(input, lambda xp, d: 1 / xp.sqrt(d), "RsqrtBackward0", _rsqrt_bw, "out")


@op(method="square", function="square", grad_fn="PowBackward0")
def square(input: Tensor) -> Tensor:
    """input * input, elementwise (torch's pow(input, 2); bool squares to int64).

    Args:
        input (Tensor): the input tensor.

    The gradient is 2 input, recorded as PowBackward0.

    Example::

        >>> rustgrad.tensor([-2., 3.]).square()
        tensor([4., 9.])
    """
    if input._data.dtype.kind == "b":
        input = _const(input._data.astype(_dtype.int64.np))
    return input ** 2


# ---- rounding: zero gradient -----------------------------------------------------------
def _zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _creation.zeros_like(g)


def _rounding(a: Tensor, fn: Any, name: str, kernel: str) -> Tensor:
    d = a._data
    if d.dtype.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    out = d.copy() if d.dtype.kind in "iu" else fn(a._backend, d)
    return record(out, (a,), name, _zeros_bw)


@op(method="floor", function="floor", grad_fn="FloorBackward0")
def floor(input: Tensor) -> Tensor:
    """The largest integer not above input, elementwise (zero gradient).

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).floor()
        tensor([-2.,  1.])
    """
    return _rounding(input, lambda xp, d: xp.floor(d), "FloorBackward0", "floor_vml_cpu")


@op(method="ceil", function="ceil", grad_fn="CeilBackward0")
def ceil(input: Tensor) -> Tensor:
    """The smallest integer not below input, elementwise (zero gradient).

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).ceil()
        tensor([-1.,  2.])
    """
    return _rounding(input, lambda xp, d: xp.ceil(d), "CeilBackward0", "ceil_vml_cpu")


@op(method=("fix", "trunc"), function=("fix", "trunc"), grad_fn="TruncBackward0")
def trunc(input: Tensor) -> Tensor:
    """input rounded toward zero, elementwise (zero gradient).

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).trunc()
        tensor([-1.,  1.])
    """
    return _rounding(input, lambda xp, d: xp.trunc(d), "TruncBackward0", "trunc_vml_cpu")


fix = trunc


@op(method="round", function="round", grad_fn=("RoundBackward0", "RoundBackward1"))
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """input rounded to the nearest integer, halves to even (or to decimals places).

    Args:
        input (Tensor): the input tensor.
        decimals (int, optional): keyword-only; the number of decimal places, computed as torch
            does, rint(input * 10**decimals) / 10**decimals. Default: 0.

    The gradient is zero everywhere.

    Example::

        >>> rustgrad.tensor([0.5, 1.5, 2.5, -0.5]).round()
        tensor([0., 2., 2., -0.])
        >>> rustgrad.tensor([1.2345]).round(decimals=2)
        tensor([1.2300])
    """
    if decimals == 0:
        return _rounding(input, lambda xp, d: xp.rint(d), "RoundBackward0", "round_vml_cpu")
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(
            f'"round_cpu" not implemented for \'{_type_name(_dtype.from_np(d.dtype))}\''
        )
    xp = input._backend
    if decimals > 0:
        p = d.dtype.type(10.0 ** decimals)
        out = xp.rint(d * p) / p
    else:
        p = d.dtype.type(10.0 ** -decimals)
        out = xp.rint(d / p) * p
    return record(out.astype(d.dtype, copy=False), (input,), "RoundBackward1", _zeros_bw)


# ---- erf -------------------------------------------------------------------------------
def _erf_array(xp: Any, d: Any) -> Any:
    """erf of an array: the backend's kernel where it has one (CPU: Rust's libm; CUDA: CuPy),
    else `_erf_series`."""
    kernel = xp.kernels.erf
    if kernel is not None and d.dtype.kind == "f":
        return kernel(d)
    if kernel is not None and _dtype.is_floating_np(d.dtype):  # bfloat16: in float32, rounded
        return kernel(d.astype("float32")).astype(d.dtype)
    return _erf_series(xp, d)


def _erf_series(xp: Any, d: Any) -> Any:
    """erf in float64 for a backend without one: for |x| <= 2.5 the series
    erf(x) = 2/sqrt(pi) exp(-x^2) sum_n x (2x^2)^n / (2n+1)!!, whose terms are all positive, and
    beyond it 1 - erfc(x) with erfc's continued fraction; about 1e-15 relative error."""
    x = d.astype(xp.float64)
    ax = xp.abs(x)
    small = ax <= 2.5
    xs = xp.where(small, ax, 0.0)
    term = xs.copy()
    total = xs.copy()
    two_x2 = 2.0 * xs * xs
    for n in range(1, 48):
        term = term * two_x2 / (2 * n + 1)
        total = total + term
    res_small = _TWO_OVER_SQRT_PI * xp.exp(-xs * xs) * total
    xl = xp.where(small, 3.0, ax)
    frac = xp.zeros_like(xl)
    for k in range(64, 0, -1):
        frac = (0.5 * k) / (xl + frac)
    erfc = xp.exp(-xl * xl) / (math.sqrt(math.pi) * (xl + frac))
    res = xp.where(small, res_small, 1.0 - erfc)
    res = xp.where(x < 0, -res, res)
    return res.astype(d.dtype, copy=False)


def _erf_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * (_TWO_OVER_SQRT_PI * (-(a * a)).exp())


@op(method="erf", function="erf", grad_fn="ErfBackward0")
def erf(input: Tensor) -> Tensor:
    """The error function of input, elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient is 2 / sqrt(pi) exp(-input^2).

    Example::

        >>> rustgrad.tensor([0., 1.]).erf()
        tensor([0.0000, 0.8427])
    """
    d = input._data if isinstance(input, Tensor) else None
    kernel = None if d is None else input._backend.kernels.erf
    if kernel is not None and d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        # the backend's kernel raises no floating-point warnings: no errstate to enter (~1 us)
        return record(kernel(d), (input,), "ErfBackward0", _erf_bw, (input,))
    return _unary(input, _erf_array, "ErfBackward0", _erf_bw, "in")


# ---- lerp, fmod ------------------------------------------------------------------------
def _check_same_dtype(a: Tensor, other: Tensor, what: str) -> None:
    same_device(a._data, other._data)
    if a._data.dtype != other._data.dtype:
        raise RuntimeError(
            f"expected dtype {_dtype.cpp_name(a.dtype)} for `{what}` but got dtype "
            f"{_dtype.cpp_name(other.dtype)}"
        )


def _lerp_scalar_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    w, meta = ctx
    return _binary_grads(g * (1 - w), g * w, meta)


def _lerp_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    start, end, weight = saved
    shapes = ctx
    grads = (g * (1 - weight), g * weight, g * (end - start))
    return tuple(sum_to(x, s) for x, s in zip(grads, shapes))


@op(method="lerp", function="lerp", grad_fn=("LerpBackward0", "LerpBackward1"))
def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """input + weight * (end - input): linear interpolation, evaluated as torch does near weight 1.

    Args:
        input (Tensor): the start points.
        end (Tensor): the end points.
        weight (float or Tensor): the interpolation weight, broadcast with input and end.

    Example::

        >>> rustgrad.lerp(rustgrad.tensor([0., 10.]), rustgrad.tensor([1., 20.]), 0.5)
        tensor([ 0.5000, 15.0000])
    """
    _check_same_dtype(input, end, "end")
    xp = input._backend
    s, e = input._data, end._data
    if isinstance(weight, Tensor):
        _check_same_dtype(input, weight, "weight")
        w = weight._data
        out = xp.where(xp.abs(w) < 0.5, s + w * (e - s), e - (e - s) * (1 - w))
        shapes = (s.shape, e.shape, w.shape)
        return record(out.astype(s.dtype, copy=False), (input, end, weight), "LerpBackward1",
                      _lerp_tensor_bw, (input, end, weight), shapes)
    w = as_scalar(weight)
    if w is None:
        raise TypeError(f"lerp(): argument 'weight' must be Number or Tensor, not "
                        f"{type(weight).__name__}")
    out = s + w * (e - s) if -0.5 < w < 0.5 else e - (e - s) * (1 - w)
    out = xp.asarray(out).astype(s.dtype, copy=False)
    return record(out, (input, end), "LerpBackward0", _lerp_scalar_bw, None, (w, _meta(input, end)))


def _fmod_scalar_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return cast_grad(g, ctx)


def _fmod_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    gb = None
    if b.requires_grad:
        gb = -g * a.div(b, rounding_mode="trunc")
    return _binary_grads(g, gb, ctx)


@op(method="fmod", function="fmod", grad_fn=("FmodBackward0", "FmodBackward1"))
def fmod(input: Tensor, other: Any) -> Tensor:
    """The remainder of input / other with the sign of the dividend (C's fmod), elementwise.

    Args:
        input (Tensor): the dividend.
        other (Tensor or Number): the divisor.

    See remainder for the remainder with the sign of the divisor.

    Example::

        >>> rustgrad.tensor([-3., 3.]).fmod(2)
        tensor([-1.,  1.])
    """
    xp = input._backend
    if isinstance(other, Tensor):
        ad, bd = promote(input, other)
        if ad.dtype.kind in "iu" and bool((bd == 0).any()):
            raise RuntimeError("ZeroDivisionError")
        with quiet_fp(xp):
            out = xp.fmod(ad, bd)
        return record(out, (input, other), "FmodBackward1", _fmod_tensor_bw, (input, other),
                      _meta(input, other))
    s = as_scalar(other)
    if s is None:
        raise TypeError(f"fmod(): argument 'other' must be Tensor or Number, not "
                        f"{type(other).__name__}")
    ad = scalar_operand(input._data, s)
    if ad.dtype.kind in "iub" and type(s) is not float and s == 0:
        raise RuntimeError("ZeroDivisionError")
    with quiet_fp(xp):
        out = xp.fmod(ad, s)
    if out.dtype != ad.dtype:
        out = out.astype(ad.dtype)
    return record(out, (input,), "FmodBackward0", _fmod_scalar_bw, None, input._data.dtype)


# ---- floating-point tests and logical ops (bool results, no gradient) -----------------
@op(method="isnan", function="isnan")
def isnan(input: Tensor) -> Tensor:
    """Where input is NaN, as a bool tensor.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([1., float("nan")]).isnan()
        tensor([False,  True])
    """
    return _const(input._backend.isnan(input._data))


@op(method="isinf", function="isinf")
def isinf(input: Tensor) -> Tensor:
    """Where input is +inf or -inf, as a bool tensor.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([1., float("inf"), -float("inf")]).isinf()
        tensor([False,  True,  True])
    """
    return _const(input._backend.isinf(input._data))


@op(method="isfinite", function="isfinite")
def isfinite(input: Tensor) -> Tensor:
    """Where input is neither NaN nor infinite, as a bool tensor.

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([1., float("inf"), float("nan")]).isfinite()
        tensor([ True, False, False])
    """
    return _const(input._backend.isfinite(input._data))


@op(method="isposinf", function="isposinf")
def isposinf(input: Tensor) -> Tensor:
    """Where input is +inf."""
    return _const(input._backend.isposinf(input._data))


@op(method="isneginf", function="isneginf")
def isneginf(input: Tensor) -> Tensor:
    """Where input is -inf."""
    return _const(input._backend.isneginf(input._data))


def _logical(name: str, a: Tensor, b: Any) -> Tensor:
    if not isinstance(b, Tensor):
        raise TypeError(
            f"{name}(): argument 'other' (position 2) must be Tensor, not {type(b).__name__}"
        )
    same_device(a._data, b._data)
    return _const(getattr(a._backend, name)(a._data, b._data))


@op(method="logical_and", function="logical_and")
def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """input and other, as truth values, elementwise (bool result).

    Args:
        input (Tensor): the first operand; non-zero is True.
        other (Tensor): the second operand, broadcast with input.

    Example::

        >>> rustgrad.tensor([True, True, False]).logical_and(rustgrad.tensor([True, False, False]))
        tensor([ True, False, False])
    """
    return _logical("logical_and", input, other)


@op(method="logical_or", function="logical_or")
def logical_or(input: Tensor, other: Tensor) -> Tensor:
    """input or other, as truth values, elementwise (bool result).

    Args:
        input (Tensor): the first operand; non-zero is True.
        other (Tensor): the second operand, broadcast with input.

    Example::

        >>> rustgrad.tensor([1, 0, 0]).logical_or(rustgrad.tensor([0, 2, 0]))
        tensor([ True,  True, False])
    """
    return _logical("logical_or", input, other)


@op(method="logical_xor", function="logical_xor")
def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """input xor other, as truth values (bool result)."""
    return _logical("logical_xor", input, other)


@op(method="logical_not", function="logical_not")
def logical_not(input: Tensor) -> Tensor:
    """not input, as a truth value, elementwise (bool result).

    Args:
        input (Tensor): the input tensor.

    Example::

        >>> rustgrad.tensor([0., 1.5]).logical_not()
        tensor([ True, False])
    """
    return _const(input._backend.logical_not(input._data))


# ---- in-place forms and nan_to_num ----------------------------------------------------------
def _unary_inplace(method: str, saves_input: bool = False) -> Any:
    """saves_input: the backward formula reads the input, which the write will change, so
    the op runs on a clone (as torch's generated in-place kernels save self.clone())."""
    def inplace(self: Tensor) -> Tensor:
        check_inplace(self)
        check_internal_overlap(self)
        src = self.clone() if saves_input and is_grad_enabled() and self.requires_grad else self
        return write_inplace(self, getattr(src, method)(), self.requires_grad)

    name_function(inplace, method + "_")
    inplace.__doc__ = f"In-place {method}."
    return inplace


exp_ = op(method="exp_", function="exp_", grad_fn="ExpBackward0")(_unary_inplace("exp"))
sigmoid_ = op(method="sigmoid_", function="sigmoid_", grad_fn="SigmoidBackward0")(_unary_inplace("sigmoid"))
tanh_ = op(method="tanh_", function="tanh_", grad_fn="TanhBackward0")(_unary_inplace("tanh"))
sqrt_ = op(method="sqrt_", function="sqrt_", grad_fn="SqrtBackward0")(_unary_inplace("sqrt"))
abs_ = op(method=("abs_", "absolute_"), function=("abs_", "absolute_"), grad_fn="AbsBackward0")(
    _unary_inplace("abs", True))
neg_ = op(method=("neg_", "negative_"), function=("neg_", "negative_"), grad_fn="NegBackward0")(
    _unary_inplace("neg"))
square_ = op(method="square_", function="square_", grad_fn="PowBackward0")(_unary_inplace("square", True))
relu_ = op(method="relu_", function="relu_", grad_fn=("ReluBackward0", "ThresholdBackwardBackward0"))(
    _unary_inplace("relu"))


# ---- nan_to_num ------------------------------------------------------------------------------
def _nan_to_num_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * _const(ctx.astype(g._data.dtype))


@op(method="nan_to_num", function="nan_to_num", grad_fn="NanToNumBackward0")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """input with NaN, +inf and -inf replaced by finite numbers.

    Args:
        input (Tensor): the input tensor.
        nan (float, optional): the value for NaN. Default: 0.
        posinf (float, optional): the value for +inf. Default: the dtype's largest finite value.
        neginf (float, optional): the value for -inf. Default: the dtype's smallest finite value.

    Example::

        >>> rustgrad.tensor([float("nan"), float("inf"), 1.]).nan_to_num(posinf=9.)
        tensor([0., 9., 1.])
    """
    d = input._data
    xp = input._backend
    if not _dtype.is_floating_np(d.dtype):
        return record(d.copy(), (), "", None)
    info = xp.finfo(d.dtype)
    out = xp.where(xp.isnan(d), nan, d)
    out = xp.where(xp.isposinf(d), info.max if posinf is None else posinf, out)
    out = xp.where(xp.isneginf(d), info.min if neginf is None else neginf, out)
    return record(out.astype(d.dtype), (input,), "NanToNumBackward0", _nan_to_num_bw, None,
                  xp.isfinite(d))


# ---- more in-place forms, frac, clamp_min/clamp_max, lerp_ ------------------------------------
def _write_result(self: Tensor, compute: Any, reads_self: bool, *others: Any) -> Tensor:
    """Runs an in-place op as `compute(src)` out of place and writes the result into self.
    reads_self: the backward formula reads self as it was, so src is a copy of self that keeps
    self's history (torch's generated in-place kernels save self.clone() the same way)."""
    check_inplace(self)
    check_internal_overlap(self)
    for o in others:
        check_no_partial_overlap(self, o)
    grad = is_grad_enabled() and (self.requires_grad or any(
        isinstance(o, Tensor) and o.requires_grad for o in others))
    src = _core.shallow_copy(self, self._data.copy()) if grad and reads_self else self
    out = compute(src)
    if tuple(out._data.shape) != tuple(self._data.shape):
        raise RuntimeError(
            f"output with shape {list(self._data.shape)} doesn't match the broadcast shape "
            f"{list(out._data.shape)}"
        )
    return write_inplace(self, out, grad)


def _unary_inplace_copy(method: str, reads_self: bool) -> Any:
    def inplace(self: Tensor) -> Tensor:
        return _write_result(self, lambda src: getattr(src, method)(), reads_self)

    name_function(inplace, method + "_")
    inplace.__doc__ = f"In-place {method}."
    return inplace


def _frac_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


@op(method="frac", function="frac", grad_fn="FracBackward0")
def frac(input: Tensor) -> Tensor:
    """The fractional part of input, input - trunc(input), elementwise.

    Args:
        input (Tensor): the input tensor.

    The gradient passes through unchanged (1).

    Example::

        >>> rustgrad.tensor([-1.25, 2.5]).frac()
        tensor([-0.2500,  0.5000])
    """
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"frac_cpu" not implemented for '
                                  f"'{_type_name(_dtype.from_np(d.dtype))}'")
    xp = input._backend
    return record(d - xp.trunc(d), (input,), "FracBackward0", _frac_bw)


# (method, in-place names, grad_fn, whether the backward reads the input)
_MORE_INPLACE = (
    ("log", ("log_",), "LogBackward0", True),
    ("log2", ("log2_",), "Log2Backward0", True),
    ("log10", ("log10_",), "Log10Backward0", True),
    ("log1p", ("log1p_",), "Log1PBackward0", True),
    ("exp2", ("exp2_",), "Exp2Backward0", False),
    ("expm1", ("expm1_",), "Expm1Backward0", False),
    ("sin", ("sin_",), "SinBackward0", True),
    ("cos", ("cos_",), "CosBackward0", True),
    ("tan", ("tan_",), "TanBackward0", True),
    ("asin", ("asin_", "arcsin_"), "AsinBackward0", True),
    ("acos", ("acos_", "arccos_"), "AcosBackward0", True),
    ("atan", ("atan_", "arctan_"), "AtanBackward0", True),
    ("sinh", ("sinh_",), "SinhBackward0", True),
    ("cosh", ("cosh_",), "CoshBackward0", True),
    ("rsqrt", ("rsqrt_",), "RsqrtBackward0", False),
    ("reciprocal", ("reciprocal_",), "ReciprocalBackward0", False),
    ("floor", ("floor_",), "FloorBackward0", False),
    ("ceil", ("ceil_",), "CeilBackward0", False),
    ("trunc", ("trunc_", "fix_"), "TruncBackward0", False),
    ("frac", ("frac_",), "FracBackward0", False),
    ("sign", ("sign_",), "SignBackward0", False),
    ("erf", ("erf_",), "ErfBackward0", True),
)
# torch has no rustgrad.<name> for these in-place forms, only the Tensor method
_METHOD_ONLY = {"sign_", "exp2_", "erf_"}
for _m, _names_, _node, _reads in _MORE_INPLACE:
    _fn = _unary_inplace_copy(_m, _reads)
    _fn.__name__ = _fn.__qualname__ = _names_[0]
    globals()[_names_[0]] = op(
        method=_names_, function=tuple(n for n in _names_ if n not in _METHOD_ONLY),
        grad_fn=_node)(_fn)
del _m, _names_, _node, _reads, _fn


@op(method="round_", function="round_", grad_fn=("RoundBackward0", "RoundBackward1"))
def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place round (half to even)."""
    return _write_result(self, lambda src: round(src, decimals=decimals), False)


def _clamp_side_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15's clamp_min/clamp_max: strict as clamp's, a value on the bound (or NaN)
    # gets no gradient
    (a,) = saved
    lo, hi = ctx
    return where((a > lo) if lo is not None else (a < hi), g, 0.0)


def _clamp_side_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15: clamp(min=Tensor)'s formula (ties split, a NaN input passes g to both)
    a, b = saved
    is_min, (ash, adt, bsh, bdt) = ctx
    none = (None, None)
    if is_min:
        return _clamp_tensor_bw(g, (a, b, None), ((ash, adt), (bsh, bdt), none))
    return _clamp_tensor_bw(g, (a, None, b), ((ash, adt), none, (bsh, bdt)))


def _clamp_side(a: Tensor, bound: Any, is_min: bool) -> Tensor:
    name = ("ClampMinBackward" if is_min else "ClampMaxBackward")
    if isinstance(bound, Tensor):
        lo, hi = (bound, None) if is_min else (None, bound)
        out = _clamp_tensor(a, lo, hi)._data
        return record(out, (a, bound), name + "1", _clamp_side_tensor_bw, (a, bound),
                      (is_min, _meta(a, bound)))
    s = as_scalar(bound)
    if s is None:
        raise TypeError(f"clamp_{'min' if is_min else 'max'}(): argument '"
                        f"{'min' if is_min else 'max'}' must be Number or Tensor, not "
                        f"{type(bound).__name__}")
    lo, hi = (s, None) if is_min else (None, s)
    out = _clamp_array(a, lo, hi)
    return record(out, (a,), name + "0", _clamp_side_bw, (a,), (lo, hi))


@op(method="clamp_min", function="clamp_min", grad_fn=("ClampMinBackward0", "ClampMinBackward1"))
def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002  (torch's name)
    """input limited from below by min (a number or a tensor).

    Args:
        input (Tensor): the input tensor.
        min (Number or Tensor): the lower bound.

    Example::

        >>> rustgrad.tensor([-1., 2.]).clamp_min(0.)
        tensor([0., 2.])
    """
    return _clamp_side(input, min, True)


@op(method="clamp_max", function="clamp_max", grad_fn=("ClampMaxBackward0", "ClampMaxBackward1"))
def clamp_max(input: Tensor, max: Any) -> Tensor:  # noqa: A002  (torch's name)
    """input limited from above by max (a number or a tensor).

    Args:
        input (Tensor): the input tensor.
        max (Number or Tensor): the upper bound.

    Example::

        >>> rustgrad.tensor([-1., 2.]).clamp_max(0.)
        tensor([-1.,  0.])
    """
    return _clamp_side(input, max, False)


@op(method="clamp_min_", function="clamp_min_", grad_fn=("ClampMinBackward0", "ClampMinBackward1"))
def clamp_min_(self: Tensor, min: Any) -> Tensor:  # noqa: A002
    """clamp_min written into self."""
    return _write_result(self, lambda src: _clamp_side(src, min, True), True, min)


@op(method="clamp_max_", function="clamp_max_", grad_fn=("ClampMaxBackward0", "ClampMaxBackward1"))
def clamp_max_(self: Tensor, max: Any) -> Tensor:  # noqa: A002
    """clamp_max written into self."""
    return _write_result(self, lambda src: _clamp_side(src, max, False), True, max)


@op(method="lerp_")
def lerp_(self: Tensor, end: Tensor, weight: Any) -> Tensor:
    """lerp written into self (weight a number or a tensor)."""
    reads = isinstance(weight, Tensor)  # LerpBackward1 reads start
    return _write_result(self, lambda src: lerp(src, end, weight), reads, end, weight)
