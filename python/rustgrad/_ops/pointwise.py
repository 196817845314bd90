"""Pointwise ops: exp, log, sqrt, abs/absolute, sign, tanh, reciprocal, clamp; trigonometric and
hyperbolic functions and their inverses (acosh/asinh/atanh), deg2rad/rad2deg, angle,
exp2/expm1/log2/log10/log1p, rsqrt, square, rounding (zero gradient), erf, lerp, fmod, atan2,
the floating-point tests (isnan/isinf/isfinite, signbit, isreal), the logical ops, the in-place
forms (exp_, sigmoid_, tanh_, sqrt_, abs_, neg_, square_, relu_, atan2_, logical_and_ ...),
nan_to_num and fill (torch.fill, torch.fill_).

Backward formulas are torch's (derivatives.yaml), written in rustgrad ops so that double
backward works."""

from __future__ import annotations

import math
from typing import Any

from .. import _core, _creation, _dtype
from .._tensor import Tensor
from ._declare import op
from ._node import ELEMENTWISE, node
from ._unary import COMPLEX, Unary, declare, inplace_form
from ._util import (
    _type_name,
    as_scalar,
    broadcast_error,
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
)
from ._util import (
    const as _const,
)
from .compare import where
from .copyslices import commit_inplace, inplace_from

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_DEG2RAD = math.pi / 180.0
_RAD2DEG = 180.0 / math.pi
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# ---- helpers ---------------------------------------------------------------------------


# Gradients are returned at the output's shape and dtype: the engine sums each to its input's
# shape and casts it to its dtype (Note [Input metadata], rust/core/src/engine.rs).


# ---- exp, log, sqrt, abs, sign, tanh, reciprocal -----------------------------------------
def _exp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * saved.result


EXP = node("ExpBackward0", _exp_bw, result=True, forward=ELEMENTWISE)


@op(method="exp", function="exp", grad_fn="ExpBackward0", autocast=dict(cuda="fp32"))
def exp(input: Tensor) -> Tensor:
    """e to the power input, elementwise.

    The gradient is the result itself, exp(input).

    Example::

        >>> rustgrad.tensor([0., 1.]).exp()
        tensor([1.0000, 2.7183])
    """
    return EXP.record(input._backend.exp(floating(input)), (input,))


def _log_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / saved.self


LOG = node("LogBackward0", _log_bw, saved=("self",), forward=ELEMENTWISE)


@op(method="log", function="log", grad_fn="LogBackward0", autocast=dict(cuda="fp32"))
def log(input: Tensor) -> Tensor:
    """The natural logarithm of input, elementwise.

    Negative entries give NaN and 0 gives -inf; the gradient is 1 / input (inf at 0).

    Example::

        >>> rustgrad.tensor([1., 0.5]).log()
        tensor([ 0.0000, -0.6931])
    """
    return LOG.record(_quiet_unary(input._backend, floating(input), "log"), (input,), self=input)


def _quiet_unary(xp: Any, d: Any, name: str) -> Any:
    """sqrt, reciprocal or log of the array d, NaN and inf computed silently as torch's: the
    backend's one-pass kernel, else the array library's ufunc with its warnings off."""
    kernel = xp.kernels.unary
    out = None if kernel is None else kernel(d, name)
    if out is None:
        with quiet_fp(xp):
            out = 1 / d if name == "reciprocal" else getattr(xp, name)(d)
    return out


def _sqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (2 * saved.result)


SQRT = node("SqrtBackward0", _sqrt_bw, result=True, forward=ELEMENTWISE)


@op(method="sqrt", function="sqrt", grad_fn="SqrtBackward0")
def sqrt(input: Tensor) -> Tensor:
    """The square root of input, elementwise.

    The gradient is 1 / (2 sqrt(input)): infinite at 0, NaN for negative entries.

    Example::

        >>> rustgrad.tensor([1., 4.]).sqrt()
        tensor([1., 2.])
        >>> x = rustgrad.tensor([0., 4.], requires_grad=True)
        >>> x.sqrt().sum().backward()
        >>> x.grad
        tensor([   inf, 0.2500])
    """
    return SQRT.record(_quiet_unary(input._backend, floating(input), "sqrt"), (input,))


def _abs_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * saved.self.sign()


ABS = node("AbsBackward0", _abs_bw, saved=("self",), forward=ELEMENTWISE)


@op(method=("abs", "absolute"), dunder="__abs__", function=("abs", "absolute"),
    grad_fn="AbsBackward0")
def abs(input: Tensor) -> Tensor:  # noqa: A001  (torch's name)
    """The absolute value of input, elementwise.

    The gradient is sign(input), so an entry at exactly 0 gets gradient 0. `absolute` is the
    same op.

    Example::

        >>> x = rustgrad.tensor([-2., 0., 3.], requires_grad=True)
        >>> x.abs()
        tensor([2., 0., 3.], grad_fn=<AbsBackward0>)
        >>> x.abs().sum().backward()
        >>> x.grad
        tensor([-1.,  0.,  1.])
    """
    if input._data.dtype.kind == "c":
        return COMPLEX["abs"](input)
    return ABS.record(input._backend.abs(input._data), (input,), self=input)


def _sign_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch's zeros_like(grad): a constant, whatever g holds (NaN included)
    return _const(g._backend.zeros_like(g._data))


SIGN = node("SignBackward0", _sign_bw, forward=ELEMENTWISE)


@op(method="sign", function="sign", grad_fn="SignBackward0")
def sign(input: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of input, elementwise (0 for NaN, as torch's).

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
    return SIGN.record(out, (input,))


def _tanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    out = saved.result
    return g * (1 - out * out)


TANH = node("TanhBackward0", _tanh_bw, result=True, forward=ELEMENTWISE)


@op(method="tanh", function="tanh", functional="tanh", grad_fn="TanhBackward0")
def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent of input, elementwise.

    The gradient is 1 - tanh(input)^2, computed from the saved result.

    Example::

        >>> rustgrad.tensor([0., 1.]).tanh()
        tensor([0.0000, 0.7616])
    """
    return TANH.record(input._backend.tanh(floating(input)), (input,))


def _reciprocal_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    out = saved.result
    return -g * out * out


RECIPROCAL = node("ReciprocalBackward0", _reciprocal_bw, result=True, forward=ELEMENTWISE)


@op(method="reciprocal", function="reciprocal", grad_fn="ReciprocalBackward0", autocast=dict(cuda="fp32"))
def reciprocal(input: Tensor) -> Tensor:
    """1 / input, elementwise.

    Integer and bool inputs give float32. The gradient is -1 / input^2.

    Example::

        >>> rustgrad.tensor([2., 4.]).reciprocal()
        tensor([0.5000, 0.2500])
    """
    return RECIPROCAL.record(_quiet_unary(input._backend, floating(input), "reciprocal"),
                             (input,))


# ---- clamp -----------------------------------------------------------------------------
def _clamp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15: a value sitting on a bound gets no gradient (the bounds are strict); a
    # selection, so that a NaN in g does not leak where the input was clamped
    a = saved.self
    lo, hi = ctx
    mask = None
    if lo is not None:
        mask = a > lo
    if hi is not None:
        m = a < hi
        mask = m if mask is None else mask & m
    return where(mask, g, 0.0)


CLAMP = node("ClampBackward1", _clamp_bw, saved=("self",), forward=ELEMENTWISE)


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
    return CLAMP.record(out, (input,), (lo, hi), self=input)


def _clamp_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15's clamp_backward_min_max: a tie between the input and a bound splits the
    # gradient in halves; a NaN input passes its gradient through. A bound not given is no
    # input of the node: it gets no gradient slot.
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
    if lo is None:
        return ga, ghi
    if hi is None:
        return ga, glo
    return ga, glo, ghi


CLAMP_TENSOR = node("ClampBackward0", _clamp_tensor_bw, saved=("self", "min", "max"), forward=ELEMENTWISE)


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
    return CLAMP_TENSOR.record(out, tuple(present), self=a, min=lo, max=hi)


@op(method=("clamp_", "clip_"), function=("clamp_", "clip_"))
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


def _angle_array(xp: Any, d: Any) -> Any:
    """The argument of real d: pi where d < 0, else 0 (NaN kept)."""
    t = d.dtype.type
    return xp.where(xp.isnan(d), d, xp.where(d < 0, t(math.pi), t(0)))


# ---- trigonometric, hyperbolic, exponentials and logarithms: one row each (see _unary) -------
_ROWS = (
    Unary("sin", "SinBackward0", lambda xp, d: xp.sin(d), lambda g, s: g * s.self.cos(),
          inplace="both"),
    Unary("cos", "CosBackward0", lambda xp, d: xp.cos(d), lambda g, s: g * -s.self.sin(),
          inplace="both"),
    Unary("tan", "TanBackward0", lambda xp, d: xp.tan(d),
          lambda g, s: g * (1 + s.result * s.result), saved=("result",), inplace="both",
          autocast="fp32"),
    Unary("asin", "AsinBackward0", lambda xp, d: xp.arcsin(d),
          lambda g, s: g * rsqrt(-s.self * s.self + 1), aliases=("arcsin",), inplace="both",
          autocast="fp32"),
    Unary("acos", "AcosBackward0", lambda xp, d: xp.arccos(d),
          lambda g, s: g * -rsqrt(-s.self * s.self + 1), aliases=("arccos",), inplace="both",
          autocast="fp32"),
    Unary("atan", "AtanBackward0", lambda xp, d: xp.arctan(d),
          lambda g, s: g / (s.self * s.self + 1), aliases=("arctan",), inplace="both"),
    Unary("sinh", "SinhBackward0", lambda xp, d: xp.sinh(d), lambda g, s: g * cosh(s.self),
          inplace="both", autocast="fp32"),
    Unary("cosh", "CoshBackward0", lambda xp, d: xp.cosh(d), lambda g, s: g * sinh(s.self),
          inplace="both", autocast="fp32"),
    Unary("exp2", "Exp2Backward0", lambda xp, d: xp.exp2(d),
          lambda g, s: g * (s.result * _LN2), saved=("result",), inplace="both"),
    Unary("expm1", "Expm1Backward0", lambda xp, d: xp.expm1(d),
          lambda g, s: g * (s.result + 1), saved=("result",), inplace="both", autocast="fp32"),
    Unary("log2", "Log2Backward0", lambda xp, d: xp.log2(d),
          lambda g, s: g / (s.self * _LN2), inplace="both", autocast="fp32"),
    Unary("log10", "Log10Backward0", lambda xp, d: xp.log10(d),
          lambda g, s: g / (s.self * _LN10), inplace="both", autocast="fp32"),
    Unary("log1p", "Log1PBackward0", lambda xp, d: xp.log1p(d),
          lambda g, s: g / (s.self + 1), inplace="both", autocast="fp32"),
    Unary("rsqrt", "RsqrtBackward0", lambda xp, d: 1 / xp.sqrt(d),
          lambda g, s: -0.5 * g * s.result * s.result * s.result, saved=("result",),
          inplace="both", autocast="fp32"),
    # torch's in-place forms of these three record <Name>Backward1, whose derivative torch has
    # not implemented (declared below)
    Unary("acosh", "AcoshBackward0", lambda xp, d: xp.arccosh(d),
          lambda g, s: g * rsqrt(s.self * s.self - 1), aliases=("arccosh",), half="float32"),
    Unary("asinh", "AsinhBackward0", lambda xp, d: xp.arcsinh(d),
          lambda g, s: g * rsqrt(s.self * s.self + 1), aliases=("arcsinh",), half="float32"),
    Unary("atanh", "AtanhBackward0", lambda xp, d: xp.arctanh(d),
          lambda g, s: g / (-s.self * s.self + 1), aliases=("arctanh",), half="float32"),
    Unary("deg2rad", "Deg2RadBackward0", lambda xp, d: d * d.dtype.type(_DEG2RAD),
          lambda g, s: g * _DEG2RAD, saved=(), inplace="both", half="float32"),
    Unary("rad2deg", "Rad2DegBackward0", lambda xp, d: d * d.dtype.type(_RAD2DEG),
          lambda g, s: g * _RAD2DEG, saved=(), inplace="both", half="float32"),
    Unary("angle", "AngleBackward0", lambda xp, d: _angle_array(xp, d),
          lambda g, s: _creation.zeros_like(g)),
)
_DOCS = {
    "sin": """The sine of input (radians), elementwise.

    The gradient is cos(input).

    Example::

        >>> rustgrad.tensor([0., 1.5707963]).sin()
        tensor([0., 1.])
    """,
    "cos": """The cosine of input (radians), elementwise.

    The gradient is -sin(input).

    Example::

        >>> rustgrad.tensor([0., 3.1415927]).cos()
        tensor([ 1., -1.])
    """,
    "tan": """The tangent of input (radians), elementwise.

    The gradient is 1 + tan(input)^2.

    Example::

        >>> rustgrad.tensor([0., 0.7853982]).tan()
        tensor([0., 1.])
    """,
    "asin": """The arcsine of input, elementwise (NaN outside [-1, 1]).

    The gradient is 1 / sqrt(1 - input^2), infinite at -1 and 1.

    Example::

        >>> rustgrad.tensor([0., 1.]).asin()
        tensor([0.0000, 1.5708])
    """,
    "acos": """The arccosine of input, elementwise (NaN outside [-1, 1]).

    The gradient is -1 / sqrt(1 - input^2), infinite at -1 and 1.

    Example::

        >>> rustgrad.tensor([1., 0.]).acos()
        tensor([0.0000, 1.5708])
    """,
    "atan": """The arctangent of input, elementwise.

    The gradient is 1 / (1 + input^2).

    Example::

        >>> rustgrad.tensor([0., 1.]).atan()
        tensor([0.0000, 0.7854])
    """,
    "sinh": """The hyperbolic sine of input, elementwise.

    Example::

        >>> rustgrad.tensor([0., 1.]).sinh()
        tensor([0.0000, 1.1752])
    """,
    "cosh": """The hyperbolic cosine of input, elementwise.

    Example::

        >>> rustgrad.tensor([0., 1.]).cosh()
        tensor([1.0000, 1.5431])
    """,
    "exp2": """2 to the power input, elementwise.

    Example::

        >>> rustgrad.tensor([0., 3.]).exp2()
        tensor([1., 8.])
    """,
    "expm1": """exp(input) - 1, elementwise, accurate near 0.

    Example::

        >>> rustgrad.tensor([0., 1e-10], dtype=rustgrad.float64).expm1()
        tensor([0.0000e+00, 1.0000e-10], dtype=torch.float64)
    """,
    "log2": """The base-2 logarithm of input, elementwise.

    Example::

        >>> rustgrad.tensor([1., 8.]).log2()
        tensor([0., 3.])
    """,
    "log10": """The base-10 logarithm of input, elementwise.

    Example::

        >>> rustgrad.tensor([1., 10.]).log10()
        tensor([0., 1.])
    """,
    "log1p": """log(1 + input), elementwise, accurate near 0.

    The gradient is 1 / (1 + input).

    Example::

        >>> rustgrad.tensor([0., 1e-10], dtype=rustgrad.float64).log1p()
        tensor([0.0000e+00, 1.0000e-10], dtype=torch.float64)
    """,
    "acosh": """The inverse hyperbolic cosine of input, elementwise (NaN below 1).

    The gradient is 1 / sqrt(input^2 - 1), infinite at 1. `arccosh` is the same op.

    Example::

        >>> rustgrad.tensor([1., 2.]).acosh()
        tensor([0.0000, 1.3170])
    """,
    "asinh": """The inverse hyperbolic sine of input, elementwise.

    The gradient is 1 / sqrt(input^2 + 1). `arcsinh` is the same op.

    Example::

        >>> rustgrad.tensor([0., 1.]).asinh()
        tensor([0.0000, 0.8814])
    """,
    "atanh": """The inverse hyperbolic tangent of input, elementwise (inf at 1, NaN beyond).

    The gradient is 1 / (1 - input^2). `arctanh` is the same op.

    Example::

        >>> rustgrad.tensor([0., 0.5]).atanh()
        tensor([0.0000, 0.5493])
    """,
    "deg2rad": """input converted from degrees to radians (input * pi / 180), elementwise.

    Example::

        >>> rustgrad.tensor([180., 90.]).deg2rad()
        tensor([3.1416, 1.5708])
    """,
    "rad2deg": """input converted from radians to degrees (input * 180 / pi), elementwise.

    Example::

        >>> rustgrad.tensor([3.1415927, 1.]).rad2deg()
        tensor([180.0000,  57.2958])
    """,
    "angle": """The argument of input as a complex number: pi for negative entries, else 0.

    NaN stays NaN; -0. gives 0. The gradient is zero, as torch's for real inputs.

    Example::

        >>> rustgrad.tensor([-2., 0., 3.]).angle()
        tensor([3.1416, 0.0000, 0.0000])
    """,
    "rsqrt": """1 / sqrt(input), elementwise.

    0 gives inf and negative entries NaN. The gradient is -0.5 input^(-3/2).

    Example::

        >>> rustgrad.tensor([1., 4.]).rsqrt()
        tensor([1.0000, 0.5000])
    """,
}
_OPS = declare(_ROWS, _DOCS, __name__)
sin, cos, tan, asin, acos, atan = (_OPS[n] for n in ("sin", "cos", "tan", "asin", "acos", "atan"))
sinh, cosh, exp2, expm1 = (_OPS[n] for n in ("sinh", "cosh", "exp2", "expm1"))
log2, log10, log1p, rsqrt = (_OPS[n] for n in ("log2", "log10", "log1p", "rsqrt"))
acosh, asinh, atanh, angle = (_OPS[n] for n in ("acosh", "asinh", "atanh", "angle"))
deg2rad, rad2deg = _OPS["deg2rad"], _OPS["rad2deg"]
arccosh, arcsinh, arctanh = acosh, asinh, atanh


def _inplace_not_implemented_bw(g: Tensor, saved: Any, name: Any) -> Any:
    raise NotImplementedError(f"the derivative for 'inplace version of {name}' is not implemented.")


def _inplace_without_derivative(name: str, alias: str) -> Any:
    """`name`_ (and `alias`_): the op written into self, recording <Name>Backward1, which raises
    at backward as torch's (torch has no derivative for these in-place forms)."""
    node_name = f"{name.capitalize()}Backward1"
    spec = node(node_name, _inplace_not_implemented_bw)
    out_of_place = _OPS[name]

    def inplace(self: Tensor) -> Tensor:
        return inplace_from(
            self, lambda src: spec.record(out_of_place(src.detach())._data, (src,), name), False)

    names = (name + "_", alias + "_")
    name_function(inplace, names[0])
    inplace.__module__ = __name__
    inplace.__doc__ = f"{name} written into self (torch has no derivative for it: backward raises)."
    return op(method=names, function=names, grad_fn=node_name)(inplace)


acosh_ = _inplace_without_derivative("acosh", "arccosh")
asinh_ = _inplace_without_derivative("asinh", "arcsinh")
atanh_ = _inplace_without_derivative("atanh", "arctanh")


def _atan2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    recip = (a * a + b * b).reciprocal()
    return g * b * recip, g * -a * recip


ATAN2 = node("Atan2Backward0", _atan2_bw, saved=("self", "other"), forward=ELEMENTWISE)


@op(method=("arctan2", "atan2"), function=("arctan2", "atan2"), grad_fn="Atan2Backward0", autocast=dict(cuda="promote"))
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
    return _atan2(input, other)


def _atan2(input: Tensor, other: Tensor, out_dtype: Any = None) -> Tensor:
    """atan2 in the promoted float dtype, rounded to out_dtype when given (an in-place form's:
    one node, as torch's)."""
    ad, bd = promote(input, other)
    if ad.dtype.kind in "biu":
        ft = _dtype.get_default_dtype().np
        ad, bd = ad.astype(ft), bd.astype(ft)
    if out_dtype is not None:
        check_inplace_cast(input, _dtype.from_np(ad.dtype))
    xp = input._backend
    try:
        with quiet_fp(xp):
            out = xp.arctan2(ad, bd)
    except ValueError as e:
        raise broadcast_error(e, ad.shape, bd.shape) from None
    if out_dtype is not None:
        out = out.astype(out_dtype, copy=False)
    return ATAN2.record(out, (input, other), self=input, other=other)


@op(method=("atan2_", "arctan2_"), grad_fn="Atan2Backward0")
def atan2_(self: Tensor, other: Tensor) -> Tensor:
    """atan2 written into self (computed in the promoted dtype, rounded to self's).

    Args:
        other (Tensor): the x coordinates (broadcast to self's shape).
    """
    if not isinstance(other, Tensor):
        raise TypeError(
            f"atan2_(): argument 'other' (position 1) must be Tensor, not {type(other).__name__}"
        )
    dt = self._data.dtype
    return inplace_from(self, lambda src: _atan2(src, other, dt), True, other)


arctan2 = atan2
arctan2_ = atan2_
arcsin, arccos, arctan = asin, acos, atan

@op(method="square", function="square", grad_fn="PowBackward0")
def square(input: Tensor) -> Tensor:
    """input * input, elementwise (torch's pow(input, 2); bool squares to int64).

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


FLOOR = node("FloorBackward0", _zeros_bw, forward=ELEMENTWISE)
CEIL = node("CeilBackward0", _zeros_bw, forward=ELEMENTWISE)
TRUNC = node("TruncBackward0", _zeros_bw, forward=ELEMENTWISE)
ROUND = node("RoundBackward0", _zeros_bw, forward=ELEMENTWISE)
ROUND_DECIMALS = node("RoundBackward1", _zeros_bw, forward=ELEMENTWISE)


def _rounding(a: Tensor, fn: Any, spec: Any, kernel: str) -> Tensor:
    d = a._data
    if d.dtype.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    out = d.copy() if d.dtype.kind in "iu" else fn(a._backend, d)
    return spec.record(out, (a,))


@op(method="floor", function="floor", grad_fn="FloorBackward0")
def floor(input: Tensor) -> Tensor:
    """The largest integer not above input, elementwise (zero gradient).

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).floor()
        tensor([-2.,  1.])
    """
    return _rounding(input, lambda xp, d: xp.floor(d), FLOOR, "floor_vml_cpu")


@op(method="ceil", function="ceil", grad_fn="CeilBackward0")
def ceil(input: Tensor) -> Tensor:
    """The smallest integer not below input, elementwise (zero gradient).

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).ceil()
        tensor([-1.,  2.])
    """
    return _rounding(input, lambda xp, d: xp.ceil(d), CEIL, "ceil_vml_cpu")


@op(method=("fix", "trunc"), function=("fix", "trunc"), grad_fn="TruncBackward0")
def trunc(input: Tensor) -> Tensor:
    """input rounded toward zero, elementwise (zero gradient).

    Example::

        >>> rustgrad.tensor([-1.5, 1.5]).trunc()
        tensor([-1.,  1.])
    """
    return _rounding(input, lambda xp, d: xp.trunc(d), TRUNC, "trunc_vml_cpu")


fix = trunc


@op(method="round", function="round", grad_fn=("RoundBackward0", "RoundBackward1"))
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """input rounded to the nearest integer, halves to even (or to decimals places).

    Args:
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
        return _rounding(input, lambda xp, d: xp.rint(d), ROUND, "round_vml_cpu")
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
    return ROUND_DECIMALS.record(out.astype(d.dtype, copy=False), (input,))


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
    a = saved.self
    return g * (_TWO_OVER_SQRT_PI * (-(a * a)).exp())


ERF = node("ErfBackward0", _erf_bw, saved=("self",), forward=ELEMENTWISE)


@op(method="erf", function="erf", grad_fn="ErfBackward0")
def erf(input: Tensor) -> Tensor:
    """The error function of input, elementwise.

    The gradient is 2 / sqrt(pi) exp(-input^2).

    Example::

        >>> rustgrad.tensor([0., 1.]).erf()
        tensor([0.0000, 0.8427])
    """
    d = input._data if isinstance(input, Tensor) else None
    kernel = None if d is None else input._backend.kernels.erf
    if kernel is not None and d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        # the backend's kernel raises no floating-point warnings: no errstate to enter (~1 us)
        return ERF.record(kernel(d), (input,), self=input)
    if d is None:
        raise TypeError(f"erf(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    xp = input._backend
    with quiet_fp(xp):
        out = _erf_array(xp, floating(input))
    return ERF.record(out, (input,), self=input)


# ---- lerp, fmod ------------------------------------------------------------------------
def _check_same_dtype(a: Tensor, other: Tensor, what: str) -> None:
    same_device(a._data, other._data)
    if a._data.dtype != other._data.dtype:
        raise RuntimeError(
            f"expected dtype {_dtype.cpp_name(a.dtype)} for `{what}` but got dtype "
            f"{_dtype.cpp_name(other.dtype)}"
        )


def _lerp_scalar_bw(g: Tensor, saved: Any, w: Any) -> Any:
    return g * (1 - w), g * w


def _lerp_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    start, end, weight = saved.self, saved.end, saved.weight
    return g * (1 - weight), g * weight, g * (end - start)


LERP_SCALAR = node("LerpBackward0", _lerp_scalar_bw, forward=ELEMENTWISE)
LERP_TENSOR = node("LerpBackward1", _lerp_tensor_bw, saved=("self", "end", "weight"), forward=ELEMENTWISE)


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
        return LERP_TENSOR.record(out.astype(s.dtype, copy=False), (input, end, weight),
                                  self=input, end=end, weight=weight)
    w = as_scalar(weight)
    if w is None:
        raise TypeError(f"lerp(): argument 'weight' must be Number or Tensor, not "
                        f"{type(weight).__name__}")
    out = s + w * (e - s) if -0.5 < w < 0.5 else e - (e - s) * (1 - w)
    out = xp.asarray(out).astype(s.dtype, copy=False)
    return LERP_SCALAR.record(out, (input, end), w)


def _fmod_scalar_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


def _fmod_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    gb = None
    if b.requires_grad:
        gb = -g * a.div(b, rounding_mode="trunc")
    return g, gb


FMOD_SCALAR = node("FmodBackward0", _fmod_scalar_bw, forward=ELEMENTWISE)
FMOD_TENSOR = node("FmodBackward1", _fmod_tensor_bw, saved=("self", "other"), forward=ELEMENTWISE)


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
        return FMOD_TENSOR.record(out, (input, other), self=input, other=other)
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
    return FMOD_SCALAR.record(out, (input,))


# ---- floating-point tests and logical ops (bool results, no gradient) -----------------
@op(method="isnan", function="isnan")
def isnan(input: Tensor) -> Tensor:
    """Where input is NaN, as a bool tensor.

    Example::

        >>> rustgrad.tensor([1., float("nan")]).isnan()
        tensor([False,  True])
    """
    return _const(input._backend.isnan(input._data))


@op(method="isinf", function="isinf")
def isinf(input: Tensor) -> Tensor:
    """Where input is +inf or -inf, as a bool tensor.

    Example::

        >>> rustgrad.tensor([1., float("inf"), -float("inf")]).isinf()
        tensor([False,  True,  True])
    """
    return _const(input._backend.isinf(input._data))


@op(method="isfinite", function="isfinite")
def isfinite(input: Tensor) -> Tensor:
    """Where input is neither NaN nor infinite, as a bool tensor.

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


@op(method="signbit", function="signbit")
def signbit(input: Tensor) -> Tensor:
    """Where input's sign bit is set (negative, -0. and -NaN included), as a bool tensor.

    Example::

        >>> rustgrad.tensor([-1., -0., 0., 2.]).signbit()
        tensor([ True,  True, False, False])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"signbit(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = input._data
    xp = input._backend
    if _dtype.is_floating_np(d.dtype):
        return _const(xp.signbit(d.astype("float32") if d.dtype.kind == "V" else d))
    if d.dtype.kind == "i":
        return _const(d < 0)
    return _const(xp.zeros(d.shape, dtype=bool))


@op(method="isreal", function="isreal")
def isreal(input: Tensor) -> Tensor:
    """Where input is real (its imaginary part is 0): everywhere, as a bool tensor, for the real
    dtypes rustgrad has.

    Example::

        >>> rustgrad.isreal(rustgrad.tensor([1., float("nan")]))
        tensor([True, True])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"isreal(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _const(input._backend.ones(input._data.shape, dtype=bool))


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

    Example::

        >>> rustgrad.tensor([0., 1.5]).logical_not()
        tensor([ True, False])
    """
    return _const(input._backend.logical_not(input._data))


# torch writes these into self without autograd: self's history is left as it was (a view's
# becomes AsStridedBackward0, its version having moved), even on a leaf that requires grad
def _logical_inplace(self: Tensor, out: Tensor) -> Tensor:
    self._check_inplace_mode()
    check_internal_overlap(self)
    res = out._data
    if tuple(res.shape) != tuple(self._data.shape):
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(res.shape)}")
    self._data[...] = res.astype(self._data.dtype, copy=False)
    self._bump_version()
    return self


@op(method="logical_and_", args_like=logical_and)
def logical_and_(self: Tensor, other: Tensor) -> Tensor:
    """logical_and written into self, in self's dtype (1 or 0; not recorded by autograd, as torch's)."""
    check_no_partial_overlap(self, other)
    return _logical_inplace(self, _logical("logical_and", self, other))


@op(method="logical_or_", args_like=logical_and)
def logical_or_(self: Tensor, other: Tensor) -> Tensor:
    """logical_or written into self, in self's dtype (not recorded by autograd, as torch's)."""
    check_no_partial_overlap(self, other)
    return _logical_inplace(self, _logical("logical_or", self, other))


@op(method="logical_xor_", args_like=logical_and)
def logical_xor_(self: Tensor, other: Tensor) -> Tensor:
    """logical_xor written into self, in self's dtype (not recorded by autograd, as torch's)."""
    check_no_partial_overlap(self, other)
    return _logical_inplace(self, _logical("logical_xor", self, other))


@op(method="logical_not_")
def logical_not_(self: Tensor) -> Tensor:
    """logical_not written into self, in self's dtype (not recorded by autograd, as torch's).

    Example::

        >>> x = rustgrad.tensor([0., 2.])
        >>> x.logical_not_()
        tensor([1., 0.])
    """
    return _logical_inplace(self, logical_not(self))


# ---- fill: a new tensor of one value -------------------------------------------------------------
def _fill_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    zero = _const(g._backend.zeros_like(g._data))
    return zero if ctx is None else (zero, g.sum())


FILL = node("FillBackward0", _fill_bw)
FILL_VALUE = node("FillBackward1", _fill_bw)


def _fill_invalid(input: Any, value: Any) -> TypeError:
    return TypeError(
        f"fill() received an invalid combination of arguments - got ({type(input).__name__}, "
        f"{type(value).__name__}), but expected one of:\n * (Tensor input, Tensor value)\n"
        " * (Tensor input, Number value)\n")


@op(function="fill", grad_fn=("FillBackward0", "FillBackward1"))
def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of input's shape, dtype and device, every entry value (fill_ out of place).

    Args:
        value (Number or Tensor): the value, a number or a 0-d tensor (whose gradient is the
            sum of the result's).

    Example::

        >>> rustgrad.fill(rustgrad.tensor([1., 2., 3.]), 7)
        tensor([7., 7., 7.])
    """
    if not isinstance(input, Tensor):
        raise _fill_invalid(input, value)
    d = input._data
    xp = input._backend
    out = xp.empty(d.shape, dtype=d.dtype)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        out[...] = value.item()
        return FILL_VALUE.record(out, (input, value), True)
    s = as_scalar(value)
    if s is None:
        raise _fill_invalid(input, value)
    out[...] = checked_int(d.dtype, s)
    return FILL.record(out, (input,))


@op(function="fill_")
def fill_(input: Tensor, value: Any) -> Tensor:
    """Tensor.fill_ as a function: input filled with value, in place.

    Args:
        value (Number or Tensor): the value, a number or a 0-d tensor.
    """
    if not isinstance(input, Tensor):
        raise _fill_invalid(input, value)
    return input.fill_(value)


# ---- nan_to_num ------------------------------------------------------------------------------
def _nan_to_num_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * _const(ctx.astype(g._data.dtype))


NAN_TO_NUM = node("NanToNumBackward0", _nan_to_num_bw, forward=ELEMENTWISE)


@op(method="nan_to_num", function="nan_to_num", grad_fn="NanToNumBackward0")
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """input with NaN, +inf and -inf replaced by finite numbers.

    Args:
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
    return NAN_TO_NUM.record(out.astype(d.dtype), (input,), xp.isfinite(d))


# ---- in-place forms, frac, clamp_min/clamp_max, lerp_ -----------------------------------------
def _frac_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g


FRAC = node("FracBackward0", _frac_bw, forward=ELEMENTWISE)


@op(method="frac", function="frac", grad_fn="FracBackward0")
def frac(input: Tensor) -> Tensor:
    """The fractional part of input, input - trunc(input), elementwise.

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
    return FRAC.record(d - xp.trunc(d), (input,))


# The in-place forms of the unary ops, each declared from its out-of-place op: (method,
# in-place names, grad_fn, whether the backward reads the input, which the write changes)
_UNARY_INPLACE = (
    ("exp", ("exp_",), "ExpBackward0", False),
    ("sigmoid", ("sigmoid_",), "SigmoidBackward0", False),
    ("tanh", ("tanh_",), "TanhBackward0", False),
    ("sqrt", ("sqrt_",), "SqrtBackward0", False),
    ("abs", ("abs_",), "AbsBackward0", True),
    ("abs", ("absolute_",), "AbsBackward0", True),
    ("neg", ("neg_", "negative_"), "NegBackward0", False),
    ("square", ("square_",), "PowBackward0", True),
    ("relu", ("relu_",), ("ReluBackward0", "ThresholdBackwardBackward0"), False),
    ("log", ("log_",), "LogBackward0", True),
    ("reciprocal", ("reciprocal_",), "ReciprocalBackward0", False),
    ("floor", ("floor_",), "FloorBackward0", False),
    ("ceil", ("ceil_",), "CeilBackward0", False),
    ("trunc", ("trunc_", "fix_"), "TruncBackward0", False),
    ("frac", ("frac_",), "FracBackward0", False),
    ("sign", ("sign_",), "SignBackward0", False),
    ("erf", ("erf_",), "ErfBackward0", True),
)
# torch has no rustgrad.<name> for these in-place forms, only the Tensor method
_METHOD_ONLY = {"sign_", "absolute_"}
for _m, _names_, _node, _reads in _UNARY_INPLACE:
    inplace_form(_m, _names_, _node, _reads, __name__, function=_names_[0] not in _METHOD_ONLY)
del _m, _names_, _node, _reads


@op(method="round_", function="round_", grad_fn=("RoundBackward0", "RoundBackward1"))
def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place round (half to even)."""
    return inplace_from(self, lambda src: round(src, decimals=decimals), False)


def _clamp_side_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch >= 2.15's clamp_min/clamp_max: strict as clamp's, a value on the bound (or NaN)
    # gets no gradient
    a = saved.self
    lo, hi = ctx
    return where((a > lo) if lo is not None else (a < hi), g, 0.0)


# torch >= 2.15: clamp(min=Tensor)'s formula (ties split, a NaN input passes g to both)
def _clamp_min_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _clamp_tensor_bw(g, (saved.self, saved.min, None), None)


def _clamp_max_tensor_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _clamp_tensor_bw(g, (saved.self, None, saved.max), None)


CLAMP_MIN = node("ClampMinBackward0", _clamp_side_bw, saved=("self",), forward=ELEMENTWISE)
CLAMP_MAX = node("ClampMaxBackward0", _clamp_side_bw, saved=("self",), forward=ELEMENTWISE)
CLAMP_MIN_TENSOR = node("ClampMinBackward1", _clamp_min_tensor_bw, saved=("self", "min"), forward=ELEMENTWISE)
CLAMP_MAX_TENSOR = node("ClampMaxBackward1", _clamp_max_tensor_bw, saved=("self", "max"), forward=ELEMENTWISE)


def _clamp_side(a: Tensor, bound: Any, is_min: bool) -> Tensor:
    if isinstance(bound, Tensor):
        if is_min:
            out = _clamp_tensor(a, bound, None)._data
            return CLAMP_MIN_TENSOR.record(out, (a, bound), self=a, min=bound)
        out = _clamp_tensor(a, None, bound)._data
        return CLAMP_MAX_TENSOR.record(out, (a, bound), self=a, max=bound)
    s = as_scalar(bound)
    if s is None:
        raise TypeError(f"clamp_{'min' if is_min else 'max'}(): argument '"
                        f"{'min' if is_min else 'max'}' must be Number or Tensor, not "
                        f"{type(bound).__name__}")
    lo, hi = (s, None) if is_min else (None, s)
    out = _clamp_array(a, lo, hi)
    return (CLAMP_MIN if is_min else CLAMP_MAX).record(out, (a,), (lo, hi), self=a)


@op(method="clamp_min", function="clamp_min", grad_fn=("ClampMinBackward0", "ClampMinBackward1"))
def clamp_min(input: Tensor, min: Any) -> Tensor:  # noqa: A002  (torch's name)
    """input limited from below by min (a number or a tensor).

    Args:
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
        max (Number or Tensor): the upper bound.

    Example::

        >>> rustgrad.tensor([-1., 2.]).clamp_max(0.)
        tensor([-1.,  0.])
    """
    return _clamp_side(input, max, False)


@op(method="clamp_min_", function="clamp_min_", grad_fn=("ClampMinBackward0", "ClampMinBackward1"))
def clamp_min_(self: Tensor, min: Any) -> Tensor:  # noqa: A002
    """clamp_min written into self."""
    return inplace_from(self, lambda src: _clamp_side(src, min, True), True, min)


@op(method="clamp_max_", function="clamp_max_", grad_fn=("ClampMaxBackward0", "ClampMaxBackward1"))
def clamp_max_(self: Tensor, max: Any) -> Tensor:  # noqa: A002
    """clamp_max written into self."""
    return inplace_from(self, lambda src: _clamp_side(src, max, False), True, max)


@op(method="lerp_")
def lerp_(self: Tensor, end: Tensor, weight: Any) -> Tensor:
    """lerp written into self (weight a number or a tensor)."""
    reads = isinstance(weight, Tensor)  # LerpBackward1 reads start
    return inplace_from(self, lambda src: lerp(src, end, weight), reads, end, weight)
