"""More pointwise ops: trigonometric and hyperbolic functions, exp2/expm1/log2/log10/log1p,
rsqrt, square, rounding (zero gradient), erf, the activations (softplus, gelu, silu, leaky_relu,
elu, hardtanh), lerp, fmod, atan2, the floating-point tests (isnan/isinf/isfinite) and the
logical ops. Backward formulas are torch's (derivatives.yaml), written in rustgrad ops so that
double backward works."""

from __future__ import annotations

import math
from typing import Any

from .. import _dtype
from .._tensor import Tensor
from ._declare import op
from ._util import (
    _type_name,
    as_scalar,
    cast_grad,
    promote,
    record,
    same_device,
    scalar_operand,
    sum_to,
)
from ._util import (
    const as _const,
)

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


# ---- helpers ---------------------------------------------------------------------------
def _floating(a: Tensor) -> Any:
    """a's array, cast to the default float dtype if it is integral or bool (torch's sin(int)
    is float)."""
    d = a._data
    if d.dtype.kind in "biu":
        return d.astype(_dtype.get_default_dtype().np)
    return d


def _require_float(a: Tensor, kernel: str) -> Any:
    """torch's refusal of an integral input to a floating-point-only kernel."""
    d = a._data
    if d.dtype.kind != "f":
        raise NotImplementedError(
            f'"{kernel}" not implemented for \'{_type_name(_dtype.from_np(d.dtype))}\''
        )
    return d


def _errstate(xp: Any) -> Any:
    """Silences NumPy's floating-point warnings (torch computes inf/nan silently)."""
    es = getattr(xp, "errstate", None)
    if es is None:
        import contextlib

        return contextlib.nullcontext()
    return es(all="ignore")




def _unary(a: Tensor, fn: Any, name: str, bw: Any, save: str) -> Tensor:
    """out = fn(xp, float array of a); save: 'in' saves the input, 'out' the output."""
    if not isinstance(a, Tensor):
        raise TypeError(f"{name[:-9].lower()}(): argument 'input' must be Tensor, not "
                        f"{type(a).__name__}")
    xp = a._backend
    with _errstate(xp):
        out = fn(xp, _floating(a))
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


# ---- trigonometric and hyperbolic ------------------------------------------------------
def _sin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * saved[0].cos()


@op(method="sin", function="sin", grad_fn="SinBackward0")
def sin(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.sin(d), "SinBackward0", _sin_bw, "in")


def _cos_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * -saved[0].sin()


@op(method="cos", function="cos", grad_fn="CosBackward0")
def cos(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.cos(d), "CosBackward0", _cos_bw, "in")


def _tan_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return g * (1 + out * out)


@op(method="tan", function="tan", grad_fn="TanBackward0")
def tan(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.tan(d), "TanBackward0", _tan_bw, "out")


def _asin_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * rsqrt(-a * a + 1)


@op(method=("arcsin", "asin"), function=("arcsin", "asin"), grad_fn="AsinBackward0")
def asin(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.arcsin(d), "AsinBackward0", _asin_bw, "in")


def _acos_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g * -rsqrt(-a * a + 1)


@op(method=("acos", "arccos"), function=("acos", "arccos"), grad_fn="AcosBackward0")
def acos(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.arccos(d), "AcosBackward0", _acos_bw, "in")


def _atan_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    return g / (a * a + 1)


@op(method=("arctan", "atan"), function=("arctan", "atan"), grad_fn="AtanBackward0")
def atan(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.arctan(d), "AtanBackward0", _atan_bw, "in")


def _sinh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * cosh(saved[0])


@op(method="sinh", function="sinh", grad_fn="SinhBackward0")
def sinh(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.sinh(d), "SinhBackward0", _sinh_bw, "in")


def _cosh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * sinh(saved[0])


@op(method="cosh", function="cosh", grad_fn="CoshBackward0")
def cosh(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.cosh(d), "CoshBackward0", _cosh_bw, "in")


def _atan2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved
    recip = (a * a + b * b).reciprocal()
    return _binary_grads(g * b * recip, g * -a * recip, ctx)


@op(method=("arctan2", "atan2"), function=("arctan2", "atan2"))
def atan2(input: Tensor, other: Tensor) -> Tensor:
    if not isinstance(other, Tensor):
        raise TypeError(
            f"atan2(): argument 'other' (position 2) must be Tensor, not {type(other).__name__}"
        )
    ad, bd = promote(input, other)
    if ad.dtype.kind in "biu":
        ft = _dtype.get_default_dtype().np
        ad, bd = ad.astype(ft), bd.astype(ft)
    xp = input._backend
    with _errstate(xp):
        out = xp.arctan2(ad, bd)
    return record(out, (input, other), "Atan2Backward0", _atan2_bw, (input, other),
                  _meta(input, other))


arctan2 = atan2
arcsin, arccos, arctan = asin, acos, atan


# ---- exponentials and logarithms -------------------------------------------------------
def _exp2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * (saved[0] * _LN2)


@op(method="exp2", function="exp2")
def exp2(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.exp2(d), "Exp2Backward0", _exp2_bw, "out")


def _expm1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * (saved[0] + 1)


@op(method="expm1", function="expm1")
def expm1(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.expm1(d), "Expm1Backward0", _expm1_bw, "out")


def _log2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] * _LN2)


@op(method="log2", function="log2")
def log2(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.log2(d), "Log2Backward0", _log2_bw, "in")


def _log10_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] * _LN10)


@op(method="log10", function="log10")
def log10(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.log10(d), "Log10Backward0", _log10_bw, "in")


def _log1p_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / (saved[0] + 1)


@op(method="log1p", function="log1p")
def log1p(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: xp.log1p(d), "Log1PBackward0", _log1p_bw, "in")


def _rsqrt_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (out,) = saved
    return -0.5 * g * out * out * out


@op(method="rsqrt", function="rsqrt", grad_fn="RsqrtBackward0")
def rsqrt(input: Tensor) -> Tensor:
    return _unary(input, lambda xp, d: 1 / xp.sqrt(d), "RsqrtBackward0", _rsqrt_bw, "out")


@op(method="square", function="square")
def square(input: Tensor) -> Tensor:
    """torch.square is pow(input, 2) (PowBackward0); bool squares to int64 as in torch."""
    if input._data.dtype.kind == "b":
        input = _const(input._data.astype(_dtype.int64.np))
    return input ** 2


# ---- rounding: zero gradient -----------------------------------------------------------
def _zeros_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from .._creation import zeros_like

    return zeros_like(g)


def _rounding(a: Tensor, fn: Any, name: str, kernel: str) -> Tensor:
    d = a._data
    if d.dtype.kind == "b":
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    out = d.copy() if d.dtype.kind in "iu" else fn(a._backend, d)
    return record(out, (a,), name, _zeros_bw)


@op(method="floor", function="floor", grad_fn="FloorBackward0")
def floor(input: Tensor) -> Tensor:
    return _rounding(input, lambda xp, d: xp.floor(d), "FloorBackward0", "floor_vml_cpu")


@op(method="ceil", function="ceil", grad_fn="CeilBackward0")
def ceil(input: Tensor) -> Tensor:
    return _rounding(input, lambda xp, d: xp.ceil(d), "CeilBackward0", "ceil_vml_cpu")


@op(method=("fix", "trunc"), function=("fix", "trunc"), grad_fn="TruncBackward0")
def trunc(input: Tensor) -> Tensor:
    return _rounding(input, lambda xp, d: xp.trunc(d), "TruncBackward0", "trunc_vml_cpu")


fix = trunc


@op(method="round", function="round", grad_fn=("RoundBackward0", "RoundBackward1"))
def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even; with `decimals`, as torch: rint(x * 10**d) / 10**d."""
    if decimals == 0:
        return _rounding(input, lambda xp, d: xp.rint(d), "RoundBackward0", "round_vml_cpu")
    d = input._data
    if d.dtype.kind != "f":
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
    """erf in float64 (the backends have none): for |x| <= 2.5 the series
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
    return _unary(input, _erf_array, "ErfBackward0", _erf_bw, "in")


# ---- activations -----------------------------------------------------------------------
def _softplus_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from .select import where

    (a,) = saved
    beta, threshold = ctx
    xb = a * beta
    return where(xb > threshold, g, g * xb.sigmoid())


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold (torch's)."""
    d = _require_float(input, "softplus_cpu")
    xp = input._backend
    with _errstate(xp):
        xb = d * d.dtype.type(beta)
        soft = xp.log1p(xp.exp(xb)) / d.dtype.type(beta)
        out = xp.where(xb > threshold, d, soft).astype(d.dtype, copy=False)
    return record(out, (input,), "SoftplusBackward0", _softplus_bw, (input,), (beta, threshold))


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_KAPPA = 0.044715


def _gelu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    if ctx == "tanh":
        inner = _SQRT_2_OVER_PI * (a + _KAPPA * a * a * a)
        t = inner.tanh()
        left = 0.5 * a
        right = 1 + t
        left_derivative = 0.5 * right
        right_derivative = left * (1 - t * t) * (_SQRT_2_OVER_PI * (1 + 3 * _KAPPA * a * a))
        return g * (left_derivative + right_derivative)
    cdf = 0.5 * (1 + erf(a * math.sqrt(0.5)))
    pdf = (-0.5 * a * a).exp() * _INV_SQRT_2PI
    return g * (cdf + a * pdf)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    d = _require_float(input, "GeluKernelImpl")
    xp = input._backend
    with _errstate(xp):
        if approximate == "tanh":
            inner = _SQRT_2_OVER_PI * (d + _KAPPA * d * d * d)
            out = 0.5 * d * (1 + xp.tanh(inner))
        else:
            out = d * 0.5 * (1 + _erf_array(xp, d * d.dtype.type(math.sqrt(0.5))))
    return record(out.astype(d.dtype, copy=False), (input,), "GeluBackward0", _gelu_bw,
                  (input,), approximate)


def _silu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    (a,) = saved
    s = a.sigmoid()
    return g * (s * (1 + a * (1 - s)))


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    d = _require_float(input, "silu_cpu")
    xp = input._backend
    with _errstate(xp):
        e = xp.exp(-xp.abs(d))
        sig = xp.where(d >= 0, 1 / (1 + e), e / (1 + e))
        out = (d * sig).astype(d.dtype, copy=False)
    return record(out, (input,), "SiluBackward0", _silu_bw, (input,))


def _leaky_relu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from .select import where

    (a,) = saved
    return where(a > 0, g, g * ctx)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    d = _require_float(input, "leaky_relu_cpu")
    xp = input._backend
    out = xp.where(d > 0, d, d * d.dtype.type(negative_slope)).astype(d.dtype, copy=False)
    return record(out, (input,), "LeakyReluBackward0", _leaky_relu_bw, (input,), negative_slope)


def _elu_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    from .select import where

    (a,) = saved
    return where(a > 0, g, g * (a.exp() * ctx))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    d = _require_float(input, "elu_cpu")
    xp = input._backend
    with _errstate(xp):
        out = xp.where(d > 0, d, d.dtype.type(alpha) * xp.expm1(d)).astype(d.dtype, copy=False)
    return record(out, (input,), "EluBackward0", _elu_bw, (input,), alpha)


def _hardtanh_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch: the gradient is zero at and beyond the bounds (exclusive, unlike clamp)
    (a,) = saved
    lo, hi = ctx
    return g * ((a > lo) & (a < hi))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    d = input._data
    xp = input._backend
    out = xp.minimum(xp.maximum(d, min_val), max_val).astype(d.dtype, copy=False)
    return record(out, (input,), "HardtanhBackward0", _hardtanh_bw, (input,), (min_val, max_val))


# ---- lerp, fmod ------------------------------------------------------------------------
_C10_NAMES = {
    "float16": "c10::Half", "float32": "float", "float64": "double", "int64": "long int",
    "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
    "bool": "bool",
}


def _check_same_dtype(a: Tensor, other: Tensor, what: str) -> None:
    same_device(a._data, other._data)
    if a._data.dtype != other._data.dtype:
        raise RuntimeError(
            f"expected dtype {_C10_NAMES[a.dtype.name]} for `{what}` but got dtype "
            f"{_C10_NAMES[other.dtype.name]}"
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
    """start + weight * (end - start), evaluated as torch does for accuracy near weight 1."""
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
    out = s + w * (e - s) if abs(w) < 0.5 else e - (e - s) * (1 - w)
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
    """C's fmod: the remainder has the sign of the dividend."""
    xp = input._backend
    if isinstance(other, Tensor):
        ad, bd = promote(input, other)
        if ad.dtype.kind in "iu" and bool((bd == 0).any()):
            raise RuntimeError("ZeroDivisionError")
        with _errstate(xp):
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
    with _errstate(xp):
        out = xp.fmod(ad, s)
    if out.dtype != ad.dtype:
        out = out.astype(ad.dtype)
    return record(out, (input,), "FmodBackward0", _fmod_scalar_bw, None, input._data.dtype)


# ---- floating-point tests and logical ops (bool results, no gradient) -----------------
@op(method="isnan", function="isnan")
def isnan(input: Tensor) -> Tensor:
    return _const(input._backend.isnan(input._data))


@op(method="isinf", function="isinf")
def isinf(input: Tensor) -> Tensor:
    return _const(input._backend.isinf(input._data))


@op(method="isfinite", function="isfinite")
def isfinite(input: Tensor) -> Tensor:
    return _const(input._backend.isfinite(input._data))


@op(method="isposinf", function="isposinf")
def isposinf(input: Tensor) -> Tensor:
    return _const(input._backend.isposinf(input._data))


@op(method="isneginf", function="isneginf")
def isneginf(input: Tensor) -> Tensor:
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
    return _logical("logical_and", input, other)


@op(method="logical_or", function="logical_or")
def logical_or(input: Tensor, other: Tensor) -> Tensor:
    return _logical("logical_or", input, other)


@op(method="logical_xor", function="logical_xor")
def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    return _logical("logical_xor", input, other)


@op(method="logical_not", function="logical_not")
def logical_not(input: Tensor) -> Tensor:
    return _const(input._backend.logical_not(input._data))


