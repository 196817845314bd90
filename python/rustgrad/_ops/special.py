"""Special functions (torch.special) and the rest of torch's elementwise math.

lgamma, digamma, polygamma, mvlgamma, erfinv, erfc, erfcx, the modified Bessel functions
i0/i0e/i1/i1e, sinc, logit, xlogy, xlog1py, entr, ndtr, ndtri, log_ndtr; hypot,
logaddexp/logaddexp2, copysign, heaviside, gcd/lcm, float_power, nextafter, frexp/ldexp, sgn,
the regularized incomplete gamma functions igamma/igammac (special.gammainc/gammaincc); the
NaN-skipping reductions nansum and nanmean; the in-place forms (lgamma_ ... sgn_, fmod_,
remainder_, nan_to_num_).

The functions NumPy and CuPy lack (lgamma ... log_ndtr) are the backend's special-function
kernels (`xp.kernels`: scipy.special on the CPU, cupyx.scipy.special on CUDA); float16 and
bfloat16 are computed in float32 and rounded, integer and bool inputs give the default float
dtype, as torch's. Backward formulas are torch's (derivatives.yaml), written in rustgrad ops so
that double backward works (digamma's derivative is polygamma(1, x), and so on)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from .. import _dtype, return_types
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._unary import Unary, declare
from ._util import (
    NOT_IMPLEMENTED,
    _type_name,
    as_scalar,
    check_broadcastable,
    check_inplace_cast,
    floating,
    quiet_fp,
    same_device,
)
from ._util import const as _const
from .arith import pow, remainder, rpow
from .compare import where
from .copyslices import inplace_from
from .pointwise import ROUND_DECIMALS, erf, fmod, nan_to_num
from .pointwise import round as _round
from .reduce import _dims, _expand_back

_NUMBERS = (bool, int, float)
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LN2 = math.log(2.0)
_LN_PI = math.log(math.pi)
_INF, _NAN = math.inf, math.nan


_NO_HALF = " (not float16/bfloat16, as torch's CPU kernel)"


# ---- helpers -----------------------------------------------------------------------------
def _tensor_arg(x: Any, name: str, arg: str = "input", pos: int = 1) -> None:
    """torch's argument parser's error for a non-tensor where a Tensor is required."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _int_arg(v: Any, name: str, arg: str, pos: int) -> None:
    if type(v) is not int:
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type(v).__name__}")


def _low(dt: Any) -> bool:
    """float16 and bfloat16, which torch's kernels compute in float32."""
    return _dtype.is_floating_np(dt) and dt.itemsize < 4


def _up(d: Any) -> Any:
    """An array in the dtype torch computes it in: float16 and bfloat16 as float32."""
    return d.astype("float32") if _low(d.dtype) else d


def _kernel(xp: Any, name: str) -> Any:
    k = getattr(xp.kernels, name)
    if k is None:
        raise NotImplementedError(f"{name}: this device's backend has no kernel for it")
    return k


def _no_half(d: Any, kernel: str) -> None:
    """torch's CPU kernels of erfcx, ndtri and log_ndtr have no float16/bfloat16 loops."""
    if _low(d.dtype):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{_type_name(_dtype.from_np(d.dtype))}'")


def _unary(input: Tensor, name: str, fn: Any, spec: Any, ctx: Any = None) -> Tensor:
    """out = fn(xp, input's float array in its compute dtype), rounded to the float dtype of
    input, recorded as `spec`'s node (saving input as `self` where the spec has that slot)."""
    _tensor_arg(input, name)
    d = floating(input)
    xp = input._backend
    with quiet_fp(xp):
        out = fn(xp, _up(d))
    out = out.astype(d.dtype, copy=False)
    if "self" in spec.saved:
        return spec.record(out, (input,), ctx, self=input)
    return spec.record(out, (input,), ctx)


def _float_result(name: str, input: Any, other: Any, floats: bool = True) -> Any:
    """The NumPy dtype of a binary op's result: torch's promotion of (input, other), integral
    and bool results made the default float (`floats`) or refused as torch's CPU kernels are."""
    rt = _dtype.result_type(input, other)
    if not rt.is_floating_point:
        if not floats:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_type_name(rt)}\'')
        rt = _dtype.get_default_dtype()
    return rt.np


def _operand(x: Any, np_dt: Any, exact: bool = False) -> Any:
    """A tensor's array cast to np_dt, in its compute dtype (in np_dt itself when `exact`); a
    number as it is."""
    if isinstance(x, Tensor):
        d = x._data.astype(np_dt, copy=False)
        return d if exact else _up(d)
    return x


def _pair(input: Tensor, other: Any, np_dt: Any, exact: bool = False) -> Any:
    """(xp, a, b): both operands in their compute dtype, after torch's device and shape checks."""
    if isinstance(other, Tensor):
        same_device(input._data, other._data)
        check_broadcastable(input._data.shape, other._data.shape)
    return input._backend, _operand(input, np_dt, exact), _operand(other, np_dt, exact)


def _finish(out: Any, np_dt: Any, out_dtype: Any) -> Any:
    """out rounded to the result dtype, or to the dtype of the tensor an in-place form writes."""
    return out.astype(np_dt if out_dtype is None else out_dtype, copy=False)


def _checked_out(input: Tensor, np_dt: Any, out_dtype: Any) -> None:
    """An in-place form's refusal of a result its tensor cannot hold (Float into Long)."""
    if out_dtype is not None:
        check_inplace_cast(input, _dtype.from_np(np_dt))


def _inplace_unary(self: Tensor, fn: Any) -> Tensor:
    """self written with fn(self) (its backward reads self as it was: a copy is computed on)."""
    return inplace_from(self, fn, True)


def _inplace_binary(self: Tensor, other: Any, fn: Any) -> Tensor:
    """self written with fn(self, other, out_dtype=self's): computed in the promoted dtype and
    rounded to self's, as torch's in-place kernels, with one node."""
    dt = self._data.dtype
    return inplace_from(self, lambda src: fn(src, other, dt), True, other)


def _py_log(v: Any, one_p: bool = False) -> float:
    """log(v) (log1p(v)) of a Python number as torch's kernels give it: -inf at 0 (-1), NaN
    below."""
    v = float(v)
    edge = -1.0 if one_p else 0.0
    if v != v or v < edge:
        return _NAN
    if v == edge:
        return -_INF
    return math.log1p(v) if one_p else math.log(v)


def _zeros_like(g: Tensor) -> Tensor:
    return _const(g._backend.zeros_like(g._data))


# ---- the unary special functions: one row each (see _unary) ----------------------------------
def _lgamma_array(xp: Any, d: Any) -> Any:
    # lgamma(-inf) is +inf in C (torch), -inf in SciPy
    return xp.where(d == -_INF, _INF, _kernel(xp, "lgamma")(d))


def _tiny_safe(x: Tensor) -> Any:
    """(|x| > eps, x with its tiny entries replaced by eps): torch's guard of i1's and i1e's
    gradients at 0, whose limit is 0.5."""
    eps = _dtype.finfo(x.dtype).eps
    not_tiny = x.abs() > eps
    return not_tiny, where(not_tiny, x, eps)


def _i1_bw(g: Tensor, saved: Any) -> Any:
    not_tiny, safe = _tiny_safe(saved.self)
    return g * where(not_tiny, i0(safe) - saved.result * safe.reciprocal(), 0.5)


def _i1e_bw(g: Tensor, saved: Any) -> Any:
    not_tiny, safe = _tiny_safe(saved.self)
    gx = i0e(safe) - saved.result * (sgn(safe) + safe.reciprocal())
    return g * where(not_tiny, gx, 0.5)


def _sinc_bw(g: Tensor, saved: Any) -> Any:
    x = saved.self
    x_pi = x * math.pi
    x2_pi = x * x * math.pi
    out = g * (x_pi * x_pi.cos() - x_pi.sin()) / x2_pi
    return where(x2_pi == 0.0, 0.0, out)


def _sinc_array(xp: Any, d: Any) -> Any:
    y = d * d.dtype.type(math.pi)
    return xp.where(d == 0, d.dtype.type(1), xp.sin(y) / y)


def _entr_array(xp: Any, d: Any) -> Any:
    zero = d.dtype.type(0)
    out = xp.where(d > 0, -d * xp.log(xp.where(d > 0, d, 1)), zero)
    return xp.where(d < 0, -_INF, xp.where(xp.isnan(d), d, out))


_ROWS = (
    Unary("lgamma", "LgammaBackward0", _lgamma_array, lambda g, s: g * digamma(s.self),
          special=("gammaln",), inplace="method", half="float32"),
    Unary("digamma", "DigammaBackward0", lambda xp, d: _kernel(xp, "digamma")(d),
          lambda g, s: g * polygamma(1, s.self), special=("digamma", "psi"), inplace="method",
          half="float32"),
    Unary("erfinv", "ErfinvBackward0", lambda xp, d: _kernel(xp, "erfinv")(d),
          lambda g, s: g * (0.5 * _SQRT_PI * erfinv(s.self).square().exp()),
          special=("erfinv",), inplace="method", autocast="fp32", half="float32"),
    Unary("erfc", "ErfcBackward0", lambda xp, d: _kernel(xp, "erfc")(d),
          lambda g, s: g * (-2.0 / _SQRT_PI * (-(s.self * s.self)).exp()), special=("erfc",),
          inplace="both", half="float32"),
    Unary("erfcx", "SpecialErfcxBackward0", lambda xp, d: _kernel(xp, "erfcx")(d),
          lambda g, s: (2.0 * s.self * s.result - 2.0 / _SQRT_PI) * g,
          saved=("self", "result"), public=False, special=("erfcx",), half="refuse",
          arg_note=_NO_HALF),
    Unary("i0", "I0Backward0", lambda xp, d: _kernel(xp, "i0")(d), lambda g, s: g * i1(s.self),
          special=("i0",), inplace="both", half="float32"),
    Unary("i0e", "SpecialI0EBackward0", lambda xp, d: _kernel(xp, "i0e")(d),
          lambda g, s: g * (i1e(s.self) - sgn(s.self) * s.result), saved=("self", "result"),
          public=False, special=("i0e",), half="float32"),
    Unary("i1", "SpecialI1Backward0", lambda xp, d: _kernel(xp, "i1")(d), _i1_bw,
          saved=("self", "result"), public=False, special=("i1",), half="float32"),
    Unary("i1e", "SpecialI1EBackward0", lambda xp, d: _kernel(xp, "i1e")(d), _i1e_bw,
          saved=("self", "result"), public=False, special=("i1e",), half="float32"),
    Unary("sinc", "SincBackward0", _sinc_array, _sinc_bw, special=("sinc",), inplace="both",
          half="float32"),
    Unary("entr", "SpecialEntrBackward0", _entr_array,
          lambda g, s: g * (-(1 + s.self.log())), public=False, special=("entr",),
          half="float32"),
    Unary("ndtri", "SpecialNdtriBackward0", lambda xp, d: _kernel(xp, "ndtri")(d),
          lambda g, s: g * _SQRT_2PI * (s.result.square() / 2).exp(), saved=("result",),
          public=False, special=("ndtri",), half="refuse", arg_note=_NO_HALF),
    Unary("log_ndtr", "SpecialLogNdtrBackward0", lambda xp, d: _kernel(xp, "log_ndtr")(d),
          lambda g, s: g / _SQRT_2PI * (s.result + s.self.pow(2) / 2).neg().exp(),
          saved=("self", "result"), public=False, special=("log_ndtr",), half="refuse",
          arg_note=_NO_HALF),
)
_DOCS = {
    "lgamma": """The natural logarithm of the absolute value of the gamma function, elementwise.

    Integer and bool inputs give the default float dtype; the poles (0 and the negative
    integers) give inf. The gradient is digamma(input). `rustgrad.special.gammaln` is the same op.

    Example::

        >>> rustgrad.tensor([0.5, 1., 4.]).lgamma()
        tensor([0.5724, 0.0000, 1.7918])
    """,
    "digamma": """The logarithmic derivative of the gamma function, gamma'(input) / gamma(input).

    At 0 it is -inf (+inf at -0.), at the negative integers NaN, as torch's. The gradient is
    polygamma(1, input). `rustgrad.special.psi` is the same op.

    Example::

        >>> rustgrad.tensor([1., 2.]).digamma()
        tensor([-0.5772,  0.4228])
    """,
    "erfinv": """The inverse of the error function, elementwise (inf at 1, -inf at -1, NaN outside).

    The gradient is sqrt(pi) / 2 exp(erfinv(input)^2).

    Example::

        >>> rustgrad.tensor([0., 0.5]).erfinv()
        tensor([0.0000, 0.4769])
    """,
    "erfc": """The complementary error function, 1 - erf(input), without its cancellation.

    The gradient is -2 / sqrt(pi) exp(-input^2).

    Example::

        >>> rustgrad.tensor([0., 5.]).erfc()
        tensor([1.0000e+00, 1.5375e-12])
    """,
    "erfcx": """The scaled complementary error function, exp(input^2) erfc(input), elementwise.

    Example::

        >>> rustgrad.special.erfcx(rustgrad.tensor([0., 10.]))
        tensor([1.0000, 0.0561])
    """,
    "i0": """The modified Bessel function of the first kind of order 0, elementwise.

    The gradient is i1(input).

    Example::

        >>> rustgrad.tensor([0., 1.]).i0()
        tensor([1.0000, 1.2661])
    """,
    "i0e": """The exponentially scaled modified Bessel function of order 0, exp(-|input|) i0(input).

    Example::

        >>> rustgrad.special.i0e(rustgrad.tensor([0., 1.]))
        tensor([1.0000, 0.4658])
    """,
    "i1": """The modified Bessel function of the first kind of order 1, elementwise.

    Example::

        >>> rustgrad.special.i1(rustgrad.tensor([0., 1.]))
        tensor([0.0000, 0.5652])
    """,
    "i1e": """The exponentially scaled modified Bessel function of order 1, exp(-|input|) i1(input).

    Example::

        >>> rustgrad.special.i1e(rustgrad.tensor([0., 1.]))
        tensor([0.0000, 0.2079])
    """,
    "sinc": """The normalized sinc function, sin(pi input) / (pi input), 1 at 0, elementwise.

    Example::

        >>> rustgrad.tensor([0., 0.5, 1.5]).sinc()
        tensor([ 1.0000,  0.6366, -0.2122])
    """,
    "entr": """The elementwise entropy -input log(input): 0 at 0, -inf for negative entries.

    Example::

        >>> rustgrad.special.entr(rustgrad.tensor([0., 0.5, -1.]))
        tensor([0.0000, 0.3466,   -inf])
    """,
    "ndtri": """The standard normal quantile function (the inverse of ndtr), elementwise.

    Example::

        >>> rustgrad.special.ndtri(rustgrad.tensor([0.5, 0.975]))
        tensor([0.0000, 1.9600])
    """,
    "log_ndtr": """The log of the standard normal CDF at input, accurate far in the left tail.

    Example::

        >>> rustgrad.special.log_ndtr(rustgrad.tensor([0., -10.]))
        tensor([ -0.6931, -53.2313])
    """,
}
_OPS = declare(_ROWS, _DOCS, __name__)
lgamma, digamma, erfinv, erfc, erfcx = (_OPS[n] for n in ("lgamma", "digamma", "erfinv", "erfc", "erfcx"))
i0, i0e, i1, i1e, sinc = (_OPS[n] for n in ("i0", "i0e", "i1", "i1e", "sinc"))
entr, ndtri, log_ndtr = (_OPS[n] for n in ("entr", "ndtri", "log_ndtr"))


# ---- polygamma, mvlgamma -------------------------------------------------------------------
def _polygamma_bw(g: Tensor, saved: Any, n: Any) -> Any:
    return g * polygamma(n + 1, saved.self)


POLYGAMMA = node("PolygammaBackward0", _polygamma_bw, saved=("self",),
                 getters={"n": lambda s, c: c})
# polygamma_'s own node (torch's in-place overload has its name)
POLYGAMMA_INPLACE = node("PolygammaBackward1", _polygamma_bw, saved=("self",),
                         getters={"n": lambda s, c: c})


def _polygamma_array(n: int) -> Any:
    def compute(xp: Any, d: Any) -> Any:
        if n == 0:
            return _kernel(xp, "digamma")(d)
        out = _kernel(xp, "polygamma")(n, d)
        # torch's trigamma is NaN at -inf; its zeta, for n >= 2, NaN at +inf (SciPy: inf, 0)
        return xp.where(d == (-_INF if n == 1 else _INF), _NAN, out)

    return compute


@op(function="polygamma", special="polygamma", grad_fn="PolygammaBackward0")
def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of the digamma function at input, elementwise.

    Args:
        n (int): the order of the derivative, n >= 0 (0 is digamma).

    The gradient is polygamma(n + 1, input).

    Example::

        >>> rustgrad.polygamma(1, rustgrad.tensor([1., 2.]))
        tensor([1.6449, 0.6449])
    """
    return _polygamma(n, input, POLYGAMMA)


def _polygamma(n: int, input: Tensor, spec: Any) -> Tensor:
    _int_arg(n, "polygamma", "n", 1)
    _tensor_arg(input, "polygamma", "input", 2)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return _unary(input, "polygamma", _polygamma_array(n), spec, n)


@op(method="polygamma")
def tensor_polygamma(self: Tensor, n: int) -> Tensor:
    """The n-th derivative of the digamma function at self (torch.polygamma(n, self)).

    Args:
        n (int): the order of the derivative, n >= 0.

    Example::

        >>> rustgrad.tensor([1., 2.]).polygamma(2)
        tensor([-2.4041, -0.4041])
    """
    return polygamma(n, self)


def _mvlgamma_bw(g: Tensor, saved: Any, p: Any) -> Any:
    x = saved.self
    total = digamma(x)
    for j in range(1, p):
        total = total + digamma(x - 0.5 * j)
    return g * total


MVLGAMMA = node("MvlgammaBackward0", _mvlgamma_bw, saved=("self",), getters={"p": lambda s, c: c})


@op(method="mvlgamma", function="mvlgamma", special="multigammaln", grad_fn="MvlgammaBackward0")
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension p, elementwise.

    Args:
        p (int): the dimension, p >= 1.

    log(pi) p (p - 1) / 4 + sum over j < p of lgamma(input - j / 2); inf where an entry is not
    above (p - 1) / 2. `rustgrad.special.multigammaln` is the same op.

    Example::

        >>> rustgrad.mvlgamma(rustgrad.tensor([2.5, 3.]), 2)
        tensor([0.8570, 1.5502])
    """
    _tensor_arg(input, "mvlgamma")
    _int_arg(p, "mvlgamma", "p", 2)
    if input._data.dtype.kind == "b":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")

    def compute(xp: Any, d: Any) -> Any:
        total = _lgamma_array(xp, d)
        for j in range(1, p):
            total = total + _lgamma_array(xp, d - d.dtype.type(0.5 * j))
        return total + d.dtype.type(p * (p - 1) / 4 * _LN_PI)

    return _unary(input, "mvlgamma", compute, MVLGAMMA, p)


# ---- sinc, logit, entr -----------------------------------------------------------------------
def _logit_bw(g: Tensor, saved: Any, eps: Any) -> Any:
    x = saved.self
    grad = g / (x * (1 - x))
    if eps is None or eps < 0:
        return where((x < 0) | (x > 1), _NAN, grad)
    return where((x < eps) | (x > 1 - eps), 0.0, grad)


LOGIT = node("LogitBackward0", _logit_bw, saved=("self",), getters={"eps": lambda s, c: c})


def _logit_array(eps: Any) -> Any:
    def compute(xp: Any, d: Any) -> Any:
        if eps is not None and eps >= 0:
            lo, hi = d.dtype.type(eps), d.dtype.type(1) - d.dtype.type(eps)
            d = xp.where(d < lo, lo, xp.where(d > hi, hi, d))
        return xp.log(d / (1 - d))

    return compute


@op(method="logit", function="logit", special="logit", grad_fn="LogitBackward0")
def logit(input: Tensor, eps: Optional[float] = None) -> Tensor:
    """The log-odds log(input / (1 - input)), elementwise, input first clamped to
    [eps, 1 - eps] when eps is given.

    Args:
        eps (float, optional): the clamping bound; None (or negative) clamps nothing.

    The gradient is 1 / (input (1 - input)): 0 where eps clamped the entry, NaN outside [0, 1]
    when eps is None.

    Example::

        >>> rustgrad.tensor([0.25, 0.5, 1.]).logit()
        tensor([-1.0986,  0.0000,     inf])
        >>> rustgrad.tensor([0.25, 0.5, 1.]).logit(eps=0.1)
        tensor([-1.0986,  0.0000,  2.1972])
    """
    return _unary(input, "logit", _logit_array(eps), LOGIT, eps)


# ---- the standard normal distribution ------------------------------------------------------
def _mul_scalar_bw(g: Tensor, saved: Any, s: Any) -> Any:
    return g * s


# torch's mul(Tensor, Scalar) node, which ndtr ends on (a Python number times a tensor is
# MulBackward0 in both libraries: Python wraps the number as a tensor)
MUL_SCALAR = node("MulBackward1", _mul_scalar_bw, getters={"other": lambda s, c: c})


@op(special="ndtr", grad_fn="MulBackward1")
def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF at input, (1 + erf(input / sqrt(2))) / 2, as torch computes it.

    Example::

        >>> rustgrad.special.ndtr(rustgrad.tensor([0., 1.]))
        tensor([0.5000, 0.8413])
    """
    _tensor_arg(input, "ndtr")
    t = erf(input * _SQRT1_2) + 1
    return MUL_SCALAR.record(t._data * 0.5, (t,), 0.5)


# ---- special.round -------------------------------------------------------------------------
@op(special="round", grad_fn="RoundBackward1")
def special_round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """torch.special.round: round (halves to even) through its `decimals` form, whatever
    decimals is (RoundBackward1; integer tensors are refused, as torch's).

    Args:
        decimals (int, optional): keyword-only; the number of decimal places. Default: 0.

    Example::

        >>> rustgrad.special.round(rustgrad.tensor([0.5, 1.5, 2.25]))
        tensor([0., 2., 2.])
    """
    _tensor_arg(input, "round")
    d = input._data
    if decimals:
        return _round(input, decimals=decimals)
    if not _dtype.is_floating_np(d.dtype):
        raise NotImplementedError(f'"round_vml_cpu" not implemented for '
                                  f"'{_type_name(_dtype.from_np(d.dtype))}'")
    return ROUND_DECIMALS.record(input._backend.rint(d), (input,))


# ---- xlogy, xlog1py ----------------------------------------------------------------------
def _xlog_array(xp: Any, a: Any, b: Any, one_p: bool) -> Any:
    """x log(y) (x log1p(y)) as torch's kernels: NaN where y is NaN, else 0 where x is 0."""
    if not hasattr(b, "dtype"):  # a number y
        if b != b:
            return a * _NAN
        return xp.where(a == 0, 0.0, a * _py_log(b, one_p))
    log_b = xp.log1p(b) if one_p else xp.log(b)
    if not hasattr(a, "dtype"):  # a number x
        if a == 0:
            return xp.where(xp.isnan(b), _NAN, 0.0)
        return a * log_b
    return xp.where(xp.isnan(b), _NAN, xp.where(a == 0, 0.0, a * log_b))


def _xlog(name: str, specs: Any, input: Any, other: Any, out_dtype: Any = None) -> Tensor:
    """xlogy and xlog1py: (Tensor, Tensor), (Tensor, Number) or (Number, Tensor), each its own
    node (`specs`: torch's Backward0, 1 (number self) and 2 (number other))."""
    one_p = name == "xlog1py"
    if not isinstance(input, Tensor):
        if type(input) not in _NUMBERS or not isinstance(other, Tensor):
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(other).__name__})")
    elif not isinstance(other, Tensor) and as_scalar(other) is None:
        raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor or Number, not "
                        f"{type(other).__name__}")
    tensor = input if isinstance(input, Tensor) else other
    np_dt = _float_result(name, input, other)
    if isinstance(input, Tensor):
        _checked_out(input, np_dt, out_dtype)
        xp, a, b = _pair(input, other, np_dt)
    else:
        xp, a, b = tensor._backend, input, _operand(other, np_dt)
    with quiet_fp(xp):
        out = _finish(_xlog_array(xp, a, b, one_p), np_dt, out_dtype)
    both, number_self, number_other = specs
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return both.record(out, (input, other), self=input, other=other)
    if isinstance(other, Tensor):
        return number_self.record(out, (None, other), input, other=other)
    return number_other.record(out, (input, None), as_scalar(other), self=input)


# torch's formulas: x's gradient is xlogy(grad, y), 0 where x == 0 and y <= 0 (the limit
# taken along x == 0); y's is grad x / y
def _xlogy_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return (where((a == 0) & (b <= 0), 0.0, xlogy(g, b)) if a.requires_grad else None,
            g * a / b if b.requires_grad else None)


def _xlogy_number_self_bw(g: Tensor, saved: Any, s: Any) -> Any:
    return None, g * s / saved.other


def _xlogy_number_other_bw(g: Tensor, saved: Any, s: Any) -> Any:
    ga = xlogy(g, s)
    return (ga if s > 0 else where(saved.self == 0, 0.0, ga)), None


_SCALAR_SELF = {"self": lambda s, c: c}
_SCALAR_OTHER = {"other": lambda s, c: c}


XLOGY = (node("XlogyBackward0", _xlogy_bw, saved=("self", "other")),
         node("XlogyBackward1", _xlogy_number_self_bw, saved=("other",), getters=_SCALAR_SELF),
         node("XlogyBackward2", _xlogy_number_other_bw, saved=("self",), getters=_SCALAR_OTHER))


@op(method="xlogy", function="xlogy", special="xlogy",
    grad_fn=("XlogyBackward0", "XlogyBackward1", "XlogyBackward2"))
def xlogy(input: Any, other: Any) -> Tensor:
    """input * log(other), elementwise, broadcast: 0 where input is 0 (unless other is NaN).

    Args:
        input (Tensor or Number): the factor.
        other (Tensor or Number): the argument of the logarithm.

    Integer inputs give the default float dtype. input's gradient is xlogy(grad, other) (0 where
    input is 0 and other <= 0), other's grad * input / other.

    Example::

        >>> rustgrad.xlogy(rustgrad.tensor([0., 2.]), rustgrad.tensor([0., 3.]))
        tensor([0.0000, 2.1972])
    """
    return _xlog("xlogy", XLOGY, input, other)


def _xlog1py_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return (where((a == 0) & (b <= -1), 0.0, xlog1py(g, b)) if a.requires_grad else None,
            g * a / (b + 1) if b.requires_grad else None)


def _xlog1py_number_self_bw(g: Tensor, saved: Any, s: Any) -> Any:
    return None, g * s / (saved.other + 1)


def _xlog1py_number_other_bw(g: Tensor, saved: Any, s: Any) -> Any:
    ga = xlog1py(g, s)
    return (ga if s > -1 else where(saved.self == 0, 0.0, ga)), None


XLOG1PY = (node("SpecialXlog1PyBackward0", _xlog1py_bw, saved=("self", "other")),
           node("SpecialXlog1PyBackward1", _xlog1py_number_self_bw, saved=("other",),
                getters=_SCALAR_SELF),
           node("SpecialXlog1PyBackward2", _xlog1py_number_other_bw, saved=("self",),
                getters=_SCALAR_OTHER))


@op(special="xlog1py",
    grad_fn=("SpecialXlog1PyBackward0", "SpecialXlog1PyBackward1", "SpecialXlog1PyBackward2"))
def xlog1py(input: Any, other: Any) -> Tensor:
    """input * log1p(other), elementwise, broadcast: 0 where input is 0 (unless other is NaN).

    Args:
        input (Tensor or Number): the factor.
        other (Tensor or Number): the argument of log1p.

    Example::

        >>> rustgrad.special.xlog1py(rustgrad.tensor([0., 2.]), rustgrad.tensor([-1., 2.]))
        tensor([0.0000, 2.1972])
    """
    return _xlog("xlog1py", XLOG1PY, input, other)


@op(method="xlogy_", function="xlogy_", grad_fn=("XlogyBackward0", "XlogyBackward2"))
def xlogy_(self: Tensor, other: Any) -> Tensor:
    """xlogy written into self."""
    _tensor_arg(self, "xlogy_")
    return _inplace_binary(self, other, lambda src, o, dt: _xlog("xlogy", XLOGY, src, o, dt))


# ---- binary float ops: hypot, logaddexp, logaddexp2, nextafter, copysign -------------------
def _float_binary(name: str, input: Tensor, other: Any, fn: Any, out_dtype: Any,
                  floats: bool = False, exact: bool = False) -> Any:
    """fn(xp, a, b) of two tensors in their promoted float dtype (integral ones refused, as
    torch's CPU kernels, unless `floats`), rounded to that dtype (or out_dtype). The arrays are
    in torch's compute dtype (float16 as float32), or in the result's own dtype when `exact`."""
    _tensor_arg(input, name)
    _tensor_arg(other, name, "other", 2)
    np_dt = _float_result(name, input, other, floats)
    _checked_out(input, np_dt, out_dtype)
    xp, a, b = _pair(input, other, np_dt, exact)
    with quiet_fp(xp):
        return _finish(fn(xp, a, b), np_dt, out_dtype)


def _hypot_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b, r = saved.self, saved.other, saved.result
    return (g * a / r if a.requires_grad else None, g * b / r if b.requires_grad else None)


HYPOT = node("HypotBackward0", _hypot_bw, saved=("self", "other"), result=True)


def _hypot(input: Tensor, other: Any, out_dtype: Any = None) -> Tensor:
    out = _float_binary("hypot", input, other, lambda xp, a, b: xp.hypot(a, b), out_dtype)
    return HYPOT.record(out, (input, other), self=input, other=other)


@op(method="hypot", function="hypot", grad_fn="HypotBackward0")
def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input^2 + other^2), elementwise, broadcast, without overflow (floating point only).

    Args:
        input (Tensor): the first leg.
        other (Tensor): the second leg.

    The gradients are input / result and other / result (NaN where both are 0).

    Example::

        >>> rustgrad.hypot(rustgrad.tensor([3., 5.]), rustgrad.tensor([4., 12.]))
        tensor([ 5., 13.])
    """
    return _hypot(input, other)


@op(method="hypot_", grad_fn="HypotBackward0")
def hypot_(self: Tensor, other: Tensor) -> Tensor:
    """hypot written into self."""
    return _inplace_binary(self, other, _hypot)


def _logaddexp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return (g / (1 + (b - a).exp()) if a.requires_grad else None,
            g / (1 + (a - b).exp()) if b.requires_grad else None)


def _logaddexp2_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    a, b = saved.self, saved.other
    return (g / (1 + 2 ** (b - a)) if a.requires_grad else None,
            g / (1 + 2 ** (a - b)) if b.requires_grad else None)


LOGADDEXP = node("LogaddexpBackward0", _logaddexp_bw, saved=("self", "other"))
LOGADDEXP2 = node("Logaddexp2Backward0", _logaddexp2_bw, saved=("self", "other"))


@op(method="logaddexp", function="logaddexp", grad_fn="LogaddexpBackward0")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(input) + exp(other)), elementwise, broadcast, without overflow (floating point).

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second operand.

    Example::

        >>> rustgrad.logaddexp(rustgrad.tensor([0., 100.]), rustgrad.tensor([0., 100.]))
        tensor([  0.6931, 100.6931])
    """
    out = _float_binary("logaddexp", input, other, lambda xp, a, b: xp.logaddexp(a, b), None)
    return LOGADDEXP.record(out, (input, other), self=input, other=other)


@op(method="logaddexp2", function="logaddexp2", grad_fn="Logaddexp2Backward0")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2^input + 2^other), elementwise, broadcast, without overflow (floating point).

    Args:
        input (Tensor): the first operand.
        other (Tensor): the second operand.

    Example::

        >>> rustgrad.logaddexp2(rustgrad.tensor([1., 3.]), rustgrad.tensor([1., 3.]))
        tensor([2., 4.])
    """
    out = _float_binary("logaddexp2", input, other, lambda xp, a, b: xp.logaddexp2(a, b), None)
    return LOGADDEXP2.record(out, (input, other), self=input, other=other)


def _nextafter_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    b = saved.other
    return g, (_zeros_like(b) if b.requires_grad else None)


NEXTAFTER = node("NextafterBackward0", _nextafter_bw, saved=("self", "other"))


def _nextafter(input: Tensor, other: Any, out_dtype: Any = None) -> Tensor:
    # in the result's own dtype (`exact`): the next float16 is not the next float32
    out = _float_binary("nextafter", input, other, lambda xp, a, b: xp.nextafter(a, b),
                        out_dtype, exact=True)
    return NEXTAFTER.record(out, (input, other), self=input, other=other)


@op(method="nextafter", function="nextafter", grad_fn="NextafterBackward0")
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next representable float after input toward other, elementwise, broadcast.

    Args:
        input (Tensor): the starting points (floating point).
        other (Tensor): the directions.

    The gradient passes to input unchanged; other's is zero, as torch's.

    Example::

        >>> x = rustgrad.tensor([1.], dtype=rustgrad.float64)
        >>> (rustgrad.nextafter(x, rustgrad.tensor([2.], dtype=rustgrad.float64)) - x).item()
        2.220446049250313e-16
    """
    return _nextafter(input, other)


@op(method="nextafter_", grad_fn="NextafterBackward0")
def nextafter_(self: Tensor, other: Tensor) -> Tensor:
    """nextafter written into self."""
    return _inplace_binary(self, other, _nextafter)


def _copysign_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # ctx: None for a tensor of signs, whose gradient is zero; the number otherwise
    a = saved.self
    ga = g * where(a == 0, 0.0, saved.result / a) if a.requires_grad else None
    return ga, (_zeros_like(g) if ctx is None else None)


COPYSIGN = node("CopysignBackward0", _copysign_bw, saved=("self",), result=True)
COPYSIGN_SCALAR = node("CopysignBackward1", _copysign_bw, saved=("self",), result=True)


def _copysign(input: Tensor, other: Any, out_dtype: Any = None) -> Tensor:
    _tensor_arg(input, "copysign")
    if isinstance(other, Tensor):
        out = _float_binary("copysign", input, other, lambda xp, a, b: xp.copysign(a, b),
                            out_dtype, floats=True)
        return COPYSIGN.record(out, (input, other), self=input)
    s = as_scalar(other)
    if s is None:
        raise TypeError(f"copysign(): argument 'other' (position 2) must be Tensor or Number, "
                        f"not {type(other).__name__}")
    np_dt = _float_result("copysign", input, s)
    _checked_out(input, np_dt, out_dtype)
    xp = input._backend
    out = _finish(xp.copysign(_operand(input, np_dt), float(s)), np_dt, out_dtype)
    return COPYSIGN_SCALAR.record(out, (input, None), s, self=input)


@op(method="copysign", function="copysign", grad_fn=("CopysignBackward0", "CopysignBackward1"))
def copysign(input: Tensor, other: Any) -> Tensor:
    """The magnitude of input with the sign of other, elementwise, broadcast (floating result).

    Args:
        input (Tensor): the magnitudes.
        other (Tensor or Number): the signs (-0. counts as negative).

    The gradient of input is result / input (0 where input is 0); other's is zero.

    Example::

        >>> rustgrad.copysign(rustgrad.tensor([1., -2., 3.]), rustgrad.tensor([-1., 1., -0.]))
        tensor([-1.,  2., -3.])
    """
    return _copysign(input, other)


@op(method="copysign_", grad_fn=("CopysignBackward0", "CopysignBackward1"))
def copysign_(self: Tensor, other: Any) -> Tensor:
    """copysign written into self."""
    return _inplace_binary(self, other, _copysign)


# ---- heaviside, gcd, lcm (no gradient) -------------------------------------------------------
def _heaviside(input: Tensor, values: Any, out_dtype: Any = None) -> Tensor:
    _tensor_arg(input, "heaviside")
    _tensor_arg(values, "heaviside", "values", 2)
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    same_device(input._data, values._data)
    check_broadcastable(input._data.shape, values._data.shape)
    a, v = input._data, values._data
    xp = input._backend
    with quiet_fp(xp):
        out = xp.where(a == 0, v, a > 0).astype(a.dtype, copy=False)
    # torch's node for an op without a derivative (recorded by name: bincount records it too)
    return NOT_IMPLEMENTED.record(out, (input, values), "heaviside")


@op(method="heaviside", function="heaviside", grad_fn="torch::autograd::NotImplemented")
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 where input < 0, values where input == 0, 1 where input > 0.

    Args:
        values (Tensor): the values at 0, of input's dtype, broadcast with it.

    NaN entries give 0, as torch's. It has no derivative (backward raises, as torch's).

    Example::

        >>> rustgrad.heaviside(rustgrad.tensor([-1., 0., 2.]), rustgrad.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    return _heaviside(input, values)


@op(method="heaviside_", grad_fn="torch::autograd::NotImplemented")
def heaviside_(self: Tensor, values: Tensor) -> Tensor:
    """heaviside written into self."""
    return _inplace_binary(self, values, _heaviside)


def _integer_binary(name: str, input: Tensor, other: Any, out_dtype: Any = None) -> Tensor:
    _tensor_arg(input, name)
    _tensor_arg(other, name, "other", 2)
    rt = _dtype.result_type(input, other)
    if rt.is_floating_point or rt.is_complex or rt is _dtype.bool_:
        raise NotImplementedError(f'"{name}_cpu" not implemented for \'{_type_name(rt)}\'')
    _checked_out(input, rt.np, out_dtype)
    xp, a, b = _pair(input, other, rt.np)
    return _const(_finish(xp.gcd(a, b) if name == "gcd" else xp.lcm(a, b), rt.np, out_dtype))


@op(method="gcd", function="gcd")
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of integer tensors, elementwise, broadcast (never negative).

    Args:
        input (Tensor): integers.
        other (Tensor): integers.

    Example::

        >>> rustgrad.gcd(rustgrad.tensor([4, -6, 0]), rustgrad.tensor([6, 4, 5]))
        tensor([2, 2, 5])
    """
    return _integer_binary("gcd", input, other)


@op(method="lcm", function="lcm")
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of integer tensors, elementwise, broadcast (never negative).

    Args:
        input (Tensor): integers.
        other (Tensor): integers.

    Example::

        >>> rustgrad.lcm(rustgrad.tensor([4, -6, 0]), rustgrad.tensor([6, 4, 5]))
        tensor([12, 12,  0])
    """
    return _integer_binary("lcm", input, other)


@op(method="gcd_", function="gcd_")
def gcd_(self: Tensor, other: Tensor) -> Tensor:
    """gcd written into self."""
    return _inplace_binary(self, other, lambda src, o, dt: _integer_binary("gcd", src, o, dt))


@op(method="lcm_", function="lcm_")
def lcm_(self: Tensor, other: Tensor) -> Tensor:
    """lcm written into self."""
    return _inplace_binary(self, other, lambda src, o, dt: _integer_binary("lcm", src, o, dt))


# ---- float_power -------------------------------------------------------------------------------
@op(method="float_power", function="float_power",
    grad_fn=("PowBackward0", "PowBackward1", "PowBackward2"))
def float_power(input: Any, exponent: Any) -> Tensor:
    """input ** exponent computed in float64 (torch's pow of both cast to double).

    Args:
        input (Tensor or Number): the base.
        exponent (Tensor or Number): the exponent, broadcast with input.

    The result is float64 whatever the inputs; the gradient flows back through the cast.

    Example::

        >>> rustgrad.float_power(rustgrad.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=torch.float64)
    """
    f64 = _dtype.float64
    if not isinstance(input, Tensor):
        if type(input) not in _NUMBERS or not isinstance(exponent, Tensor):
            raise TypeError(f"float_power() received an invalid combination of arguments - got "
                            f"({type(input).__name__}, {type(exponent).__name__})")
        return rpow(exponent.to(f64), float(input))
    if isinstance(exponent, Tensor):
        return pow(input.to(f64), exponent.to(f64))
    s = as_scalar(exponent)
    if s is None:
        raise TypeError(f"float_power(): argument 'exponent' (position 2) must be Tensor or "
                        f"Number, not {type(exponent).__name__}")
    return pow(input.to(f64), float(s))


@op(method="float_power_", grad_fn=("PowBackward0", "PowBackward1"))
def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """float_power written into self, which must be float64."""
    if self.dtype is not _dtype.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {_type_name(self.dtype)} "
                           "but the operation's result requires dtype Double")
    if isinstance(exponent, Tensor):
        return self.pow_(exponent.to(_dtype.float64))
    s = as_scalar(exponent)
    return self.pow_(exponent if s is None else float(s))


# ---- frexp, ldexp, sgn -----------------------------------------------------------------------
def _frexp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g / saved.exponent.exp2()


FREXP = node("FrexpBackward0", _frexp_bw, saved=("exponent",))


@op(method="frexp", function="frexp", grad_fn="FrexpBackward0")
def frexp(input: Tensor) -> Any:
    """input split as mantissa * 2 ** exponent, elementwise: mantissa in (-1, -0.5] or
    [0.5, 1) (0 for 0), exponent int32.

    Args:
        input (Tensor): floating point values.

    Returns (mantissa, exponent) as a named tuple. The mantissa's gradient is 1 / 2 ** exponent.

    Example::

        >>> rustgrad.frexp(rustgrad.tensor([8., 0.3, 0.]))
        torch.return_types.frexp(
        mantissa=tensor([0.5000, 0.6000, 0.0000]),
        exponent=tensor([ 4, -1,  0], dtype=torch.int32))
    """
    _tensor_arg(input, "frexp")
    d = input._data
    if not _dtype.is_floating_np(d.dtype):
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    xp = input._backend
    mantissa, exponent = xp.frexp(d if d.dtype.kind == "f" else _up(d))
    exponent = _const(exponent.astype(_dtype.int32.np, copy=False))
    out = FREXP.record(mantissa.astype(d.dtype, copy=False), (input,), exponent=exponent)
    return return_types.frexp(out, exponent)


def _ldexp_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    b = saved.other
    return g * b.exp2(), (g * saved.result * _LN2 if b.requires_grad else None)


LDEXP = node("LdexpBackward0", _ldexp_bw, saved=("other",), result=True)


def _ldexp(input: Tensor, other: Any, out_dtype: Any = None) -> Tensor:
    def compute(xp: Any, a: Any, b: Any) -> Any:
        return a * xp.exp2(b)

    out = _float_binary("ldexp", input, other, compute, out_dtype, floats=True)
    return LDEXP.record(out, (input, other), other=other)


@op(method="ldexp", function="ldexp", grad_fn="LdexpBackward0")
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2 ** other, elementwise, broadcast (a floating result).

    Args:
        input (Tensor): the mantissas.
        other (Tensor): the exponents.

    Example::

        >>> rustgrad.ldexp(rustgrad.tensor([1., 0.75]), rustgrad.tensor([3, -1]))
        tensor([8.0000, 0.3750])
    """
    return _ldexp(input, other)


@op(method="ldexp_", function="ldexp_", grad_fn="LdexpBackward0")
def ldexp_(self: Tensor, other: Tensor) -> Tensor:
    """ldexp written into self."""
    return _inplace_binary(self, other, _ldexp)


# ---- igamma, igammac: the regularized incomplete gamma functions -----------------------------
_GAMMA_MAX_ITER = 20000
_TINY = 1e-300


def _gamma_p_q(xp: Any, a: Any, x: Any) -> Any:
    """(P, Q) = the regularized lower and upper incomplete gamma functions of float64 arrays
    a > 0, x > 0 (finite; other entries give values the caller replaces): P by its power
    series below a + 1, Q by its continued fraction above, each exact to a few ulps on its side
    (and the other as 1 minus it)."""
    lgamma_ = _kernel(xp, "lgamma")
    ok = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    a = xp.where(ok, a, 1.0)  # both at the broadcast shape from here
    x = xp.where(ok, x, 1.0)
    lower = x < a + 1
    # each side on entries safe for it: the other side's replaced by values it converges on
    # at once (x far below a for the series, far above for the fraction)
    xs = xp.where(lower, x, a * 0.01)
    xc = xp.where(lower, a * 2 + 30, x)
    # P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))
    term = xp.ones_like(a)
    total = xp.ones_like(a)
    denom = a.copy()
    for i in range(_GAMMA_MAX_ITER):
        denom = denom + 1
        term = term * xs / denom
        total = total + term
        if i % 8 == 7 and not bool(xp.any(term > total * 1e-16)):
            break
    p = total * xp.exp(a * xp.log(xs) - xs - lgamma_(a + 1))
    # Q = e^-x x^a / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...)), by Lentz's method
    b = xc + 1 - a
    c = xp.full(a.shape, 1 / _TINY)
    d = 1 / b
    h = d
    for i in range(1, _GAMMA_MAX_ITER):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = xp.where(xp.abs(d) < _TINY, _TINY, d)
        c = b + an / c
        c = xp.where(xp.abs(c) < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 8 == 7 and not bool(xp.any(xp.abs(delta - 1) > 1e-15)):
            break
    q = xp.exp(a * xp.log(xc) - xc - lgamma_(a)) * h
    return xp.where(lower, p, 1 - q), xp.where(lower, 1 - p, q)


def _igamma_array(xp: Any, a: Any, x: Any, upper: bool) -> Any:
    """P(a, x) (Q(a, x) when upper) of float64 arrays, with torch's values at the edges, in
    torch's order of precedence: a negative operand, a == 0, x == 0, a infinite, x infinite."""
    with quiet_fp(xp):
        p, q = _gamma_p_q(xp, a, x)
        out = q if upper else p
        out = xp.where(xp.isnan(a) | xp.isnan(x), _NAN, out)
        out = xp.where(xp.isinf(x), 0.0 if upper else 1.0, out)
        out = xp.where(xp.isinf(a), xp.where(xp.isinf(x), _NAN, 1.0 if upper else 0.0), out)
        out = xp.where(x == 0, 1.0 if upper else 0.0, out)
        out = xp.where(a == 0, xp.where(x > 0, 0.0 if upper else 1.0, _NAN), out)
        return xp.where((a < 0) | (x < 0), _NAN, out)


def _not_implemented_input(name: str) -> NotImplementedError:
    return NotImplementedError(f"the derivative for '{name}: input' is not implemented.")


def _igamma_bw(g: Tensor, saved: Any, name: Any) -> Any:
    # torch has no derivative in a; in x it is the Gamma(a, 1) density (negated for igammac)
    a, x = saved.self, saved.other
    if a.requires_grad:
        raise _not_implemented_input(name)
    density = ((a - 1) * x.log() - x - lgamma(a)).exp()
    return None, (g * density if name == "igamma" else -g * density)


IGAMMA = node("IgammaBackward0", _igamma_bw, saved=("self", "other"))
IGAMMAC = node("IgammacBackward0", _igamma_bw, saved=("self", "other"))


def _igamma(name: str, upper: bool, input: Any, other: Any, out_dtype: Any = None) -> Tensor:
    _tensor_arg(input, name)
    _tensor_arg(other, name, "other", 2)
    kernel = "igammac" if upper else "igamma"
    np_dt = _float_result(kernel, input, other, floats=False)
    _checked_out(input, np_dt, out_dtype)
    xp, a, b = _pair(input, other, np_dt)
    out = _finish(_igamma_array(xp, a.astype("float64"), b.astype("float64"), upper), np_dt,
                  out_dtype)
    spec = IGAMMAC if upper else IGAMMA
    return spec.record(out, (input, other), kernel, self=input, other=other)


@op(method="igamma", function="igamma", grad_fn="IgammaBackward0")
def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other), elementwise, broadcast.

    Args:
        input (Tensor): the shape parameters a (floating point, >= 0).
        other (Tensor): the points x (>= 0).

    P(a, x) = 1 / Gamma(a) * integral from 0 to x of t^(a-1) e^-t dt, computed in float64 (by
    its series below a + 1, its continued fraction above; slow for a in the millions). A
    negative operand gives NaN. The gradient in other is the Gamma(a, 1) density; torch has
    none in input (backward raises when input requires grad). `rustgrad.special.gammainc` is
    the same function.

    Example::

        >>> rustgrad.igamma(rustgrad.tensor([1., 2.]), rustgrad.tensor([1., 3.]))
        tensor([0.6321, 0.8009])
    """
    return _igamma("igamma", False, input, other)


@op(method="igammac", function="igammac", grad_fn="IgammacBackward0", args_like=igamma)
def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other).

    Computed as igamma's, without the cancellation of 1 - P. The gradient in other is minus
    the Gamma(a, 1) density; torch has none in input. `rustgrad.special.gammaincc` is the same
    function.

    Example::

        >>> rustgrad.igammac(rustgrad.tensor([1., 2.]), rustgrad.tensor([1., 3.]))
        tensor([0.3679, 0.1991])
    """
    return _igamma("igammac", True, input, other)


@op(special="gammainc", grad_fn="IgammaBackward0", args_like=igamma)
def gammainc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other) (igamma).

    Example::

        >>> rustgrad.special.gammainc(rustgrad.tensor([0.5]), rustgrad.tensor([1.]))
        tensor([0.8427])
    """
    return _igamma("special_gammainc", False, input, other)


@op(special="gammaincc", grad_fn="IgammacBackward0", args_like=igamma)
def gammaincc(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) (igammac).

    Example::

        >>> rustgrad.special.gammaincc(rustgrad.tensor([0.5]), rustgrad.tensor([1.]))
        tensor([0.1573])
    """
    return _igamma("special_gammaincc", True, input, other)


@op(method="igamma_", grad_fn="IgammaBackward0")
def igamma_(self: Tensor, other: Tensor) -> Tensor:
    """igamma written into self.

    Args:
        other (Tensor): the points x, broadcast to self's shape.
    """
    return _inplace_binary(self, other, lambda src, o, dt: _igamma("igamma", False, src, o, dt))


@op(method="igammac_", grad_fn="IgammacBackward0", args_like=igamma_)
def igammac_(self: Tensor, other: Tensor) -> Tensor:
    """igammac written into self."""
    return _inplace_binary(self, other, lambda src, o, dt: _igamma("igammac", True, src, o, dt))


def _sgn_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return _zeros_like(g)  # a real input's sgn is piecewise constant


SGN = node("SgnBackward0", _sgn_bw, saved=("self",), result=True)


@op(method="sgn", function="sgn", grad_fn="SgnBackward0")
def sgn(input: Tensor) -> Tensor:
    """The sign of input, elementwise: -1, 0 or 1 (0 for NaN), of input's dtype (sign for
    real tensors).

    The gradient is zero.

    Example::

        >>> rustgrad.tensor([-2., 0., 3.]).sgn()
        tensor([-1.,  0.,  1.])
    """
    _tensor_arg(input, "sgn")
    d = input._data
    xp = input._backend
    if d.dtype.kind == "b":
        out = d.copy()
    else:
        out = xp.sign(d)
        if _dtype.is_floating_np(d.dtype):
            out = xp.where(xp.isnan(d), d.dtype.type(0), out)
    return SGN.record(out, (input,), self=input)


# ---- the in-place forms of the unary ops -----------------------------------------------------
@op(method="polygamma_", grad_fn="PolygammaBackward1")
def polygamma_(self: Tensor, n: int) -> Tensor:
    """polygamma(n, self) written into self."""
    return _inplace_unary(self, lambda src: _polygamma(n, src, POLYGAMMA_INPLACE))


@op(method="mvlgamma_", grad_fn="MvlgammaBackward0")
def mvlgamma_(self: Tensor, p: int) -> Tensor:
    """mvlgamma written into self."""
    return _inplace_unary(self, lambda src: mvlgamma(src, p))


@op(method="logit_", function="logit_", grad_fn="LogitBackward0")
def logit_(self: Tensor, eps: Optional[float] = None) -> Tensor:
    """logit written into self."""
    return _inplace_unary(self, lambda src: logit(src, eps))


@op(method="sgn_", grad_fn="SgnBackward0")
def sgn_(self: Tensor) -> Tensor:
    """sgn written into self."""
    return _inplace_unary(self, sgn)


# ---- fmod_, remainder_, nan_to_num_ ----------------------------------------------------------
def _operand_for(self: Tensor, other: Any) -> Any:
    """other as an in-place form computes with it: refused when the promoted result cannot be
    written into self; a tensor of another dtype cast to self's (its gradient flows back
    through the cast), so that one node of the op ends self's history."""
    if isinstance(other, Tensor):
        check_inplace_cast(self, _dtype.result_type(self, other))
        return other if other._data.dtype == self._data.dtype else other.to(self.dtype)
    s = as_scalar(other)
    if s is not None:
        check_inplace_cast(self, _dtype.result_type(self, s))
    return other


@op(method="fmod_", grad_fn=("FmodBackward0", "FmodBackward1"))
def fmod_(self: Tensor, other: Any) -> Tensor:
    """fmod written into self."""
    operand = _operand_for(self, other)
    return inplace_from(self, lambda src: fmod(src, operand), True, other)


@op(method="remainder_", dunder="__imod__", grad_fn=("RemainderBackward0", "RemainderBackward1"))
def remainder_(self: Tensor, other: Any) -> Tensor:
    """remainder written into self (Python's %=: the sign of the divisor)."""
    operand = _operand_for(self, other)
    return inplace_from(self, lambda src: remainder(src, operand), True, other)


@op(method="nan_to_num_", function="nan_to_num_", grad_fn="NanToNumBackward0")
def nan_to_num_(self: Tensor, nan: float = 0.0, posinf: Any = None, neginf: Any = None) -> Tensor:
    """nan_to_num written into self."""
    return inplace_from(self, lambda src: nan_to_num(src, nan, posinf, neginf), False)


# ---- nansum, nanmean -------------------------------------------------------------------------
Dims = Union[int, Sequence[int], None]


def _nansum_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    shape, dims, keepdim, _ = ctx
    x = saved.self
    return _expand_back(g, shape, dims, keepdim) * x.isnan().logical_not()


NANSUM = node("NansumBackward0", _nansum_bw, saved=("self",),
              getters={"dim": lambda s, c: c[3], "keepdim": lambda s, c: c[2]})


@op(method="nansum", function="nansum", grad_fn="NansumBackward0")
def nansum(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The sum of all entries, or over dim, counting NaN as zero.

    Args:
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.
        dtype (rustgrad.dtype, optional): keyword-only; the dtype to sum in and return. Bool and
            integer inputs sum as int64 by default.

    The gradient is the incoming gradient broadcast back to input's shape, zero at the NaNs.

    Example::

        >>> x = rustgrad.tensor([[1., float("nan")], [2., 3.]])
        >>> x.nansum()
        tensor(6.)
        >>> x.nansum(dim=1)
        tensor([1., 5.])
    """
    _tensor_arg(input, "nansum")
    d = input._data
    xp = input._backend
    dims = _dims(dim, d.ndim)
    np_dtype = _dtype.to_np(dtype)
    if np_dtype is None and d.dtype.kind in "biu":
        np_dtype = _dtype.int64.np
    if np_dtype is not None:
        d = d.astype(np_dtype, copy=False)
    if _dtype.is_floating_np(d.dtype):
        d = xp.where(xp.isnan(d), d.dtype.type(0), d)
    axis = dims if d.ndim else None
    if _low(d.dtype):  # torch accumulates (b)float16 in float32 and rounds once
        out = d.sum(axis=axis, keepdims=keepdim, dtype=_dtype.float32.np).astype(d.dtype)
    else:
        out = d.sum(axis=axis, keepdims=keepdim)
    if (dims is None or not d.ndim) and not keepdim:
        out = xp.asarray(out)
    given = None if dim is None else ((dim,) if isinstance(dim, int) else tuple(dim))
    return NANSUM.record(out, (input,), (input._data.shape, dims, keepdim, given), self=input)


@op(method="nanmean", function="nanmean", grad_fn="DivBackward0")
def nanmean(input: Tensor, dim: Dims = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """The mean of the entries that are not NaN, of all of them or over dim (NaN where all are).

    Args:
        input (Tensor): the input tensor (floating point).
        dim (int or tuple of ints, optional): the dims to reduce; all of them when None.

    nansum over the count of non-NaN entries, as torch computes it (DivBackward0).

    Example::

        >>> rustgrad.tensor([[1., float("nan")], [2., 3.]]).nanmean(dim=1)
        tensor([1.0000, 2.5000])
    """
    _tensor_arg(input, "nanmean")
    d = input._data
    if not _dtype.is_floating_np(d.dtype) and d.dtype.kind != "c":
        raise NotImplementedError("nanmean(): expected input to have floating point or complex "
                                  f"dtype but got {_type_name(_dtype.from_np(d.dtype))}")
    dims = _dims(dim, d.ndim)
    xp = input._backend
    count = xp.logical_not(xp.isnan(d)).sum(axis=dims if d.ndim else None, keepdims=keepdim)
    count = _const(xp.asarray(count, dtype=_dtype.int64.np))
    with quiet_fp(xp):  # an all-NaN slice is 0 / 0: NaN, silently as torch's
        return nansum(input, dim, keepdim, dtype=dtype) / count

