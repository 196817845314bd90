"""torch.special's Bessel, Airy and zeta functions.

bessel_j0/j1, bessel_y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
spherical_bessel_j0, airy_ai and the Hurwitz zeta function; and the helpers the orthogonal
polynomials (polynomials.py) share with zeta, which takes its two operands as they do.

Values come from scipy.special on the CPU and cupyx.scipy.special on CUDA
(`_backends.special_kernels`); CuPy has no airy, so airy_ai there is computed here from series,
an integral and the asymptotic expansion, in float64 (its error ~1e-11, below the 1e-6 by which
torch's own values stray near x = -2.09 and |x| = 5); spherical_bessel_j0 is sin(x) / x (its
Taylor series below 0.5) on every device. float32 and float64 are computed in their dtype;
integer and bool inputs give the default float dtype; float16 and bfloat16 are refused, as
torch's kernels (which have no such loops) refuse them.

torch gives gradients to the Bessel functions J, Y, I and K of orders 0 and 1 (their formulas
written here in rustgrad ops, so that double backward works) and to zeta in its second
argument; airy_ai, the scaled K and spherical_bessel_j0 have none: their results never require
grad, as torch's."""

from __future__ import annotations

import math
from typing import Any, Callable, Tuple

from .. import _dtype
from .._backends import special_kernels
from .._tensor import Tensor
from ._declare import op
from ._node import node
from ._util import (
    _type_name,
    as_scalar,
    check_broadcastable,
    const,
    floating,
    promote,
    quiet_fp,
)
from .compare import where
from .special import i0

_INF, _NAN = math.inf, math.nan


# ---- helpers (also the polynomials') ---------------------------------------------------------
def refusal(kernel: str, dtype: Any, device_type: str) -> NotImplementedError:
    """torch's error for a dtype its kernel has no loop for ("bessel_j0_cpu" ... 'Half')."""
    return NotImplementedError(f'"{kernel}_{device_type}" not implemented for '
                               f"'{_type_name(dtype)}'")


def unary_array(input: Any, kernel: str) -> Tuple[Any, Any]:
    """(xp, the float array of input): integer and bool inputs as the default float dtype;
    float16/bfloat16 refused as torch's kernels refuse them."""
    if not isinstance(input, Tensor):
        raise TypeError(f"special_{kernel}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = floating(input)
    xp = input._backend
    if d.dtype.itemsize < 4:
        raise refusal(kernel, _dtype.from_np(d.dtype), xp.DEVICE_TYPE)
    return xp, d


def _invalid(kernel: str, first: Any, second: Any, names: Tuple[str, str], self_name: str
             ) -> TypeError:
    a, b = names
    return TypeError(
        f"special_{kernel}() received an invalid combination of arguments - got "
        f"({type(first).__name__}, {type(second).__name__}), but expected one of:\n"
        f" * (Tensor {a}, Tensor {b}, *, Tensor out = None)\n"
        f" * (Number {self_name}, Tensor {b}, *, Tensor out = None)\n"
        f" * (Tensor {a}, Number {b}, *, Tensor out = None)\n")


def binary_arrays(kernel: str, first: Any, second: Any, names: Tuple[str, str] = ("x", "n"),
                  self_name: str = "x") -> Tuple[Any, Any, Any]:
    """(xp, a, b): the operands of a binary special function (Tensor, Tensor), (Tensor, Number)
    or (Number, Tensor) as arrays of their promoted float dtype (torch's result_type, integral
    results as the default float dtype; float16/bfloat16 refused), after torch's device and
    shape checks; a number as a 0-d array."""
    tensors = [isinstance(v, Tensor) for v in (first, second)]
    if not any(tensors) or any(not t and as_scalar(v) is None
                               for t, v in zip(tensors, (first, second))):
        raise _invalid(kernel, first, second, names, self_name)
    rt = _dtype.result_type(first, second)
    if not rt.is_floating_point:
        rt = _dtype.get_default_dtype()
    tensor = first if tensors[0] else second
    xp = tensor._backend
    if rt.itemsize < 4:
        raise refusal(kernel, rt, xp.DEVICE_TYPE)
    np_dt = rt.np
    if all(tensors):
        a, b = promote(first, second)  # a 0-d CPU tensor is taken to the other's device
        check_broadcastable(a.shape, b.shape)
        xp = (second if first._backend.DEVICE_TYPE == "cpu" else first)._backend
        return xp, a.astype(np_dt, copy=False), b.astype(np_dt, copy=False)
    a, b = (xp.asarray(as_scalar(v), dtype=np_dt) if not t else v._data.astype(np_dt, copy=False)
            for t, v in zip(tensors, (first, second)))
    return xp, a, b


def broadcast(xp: Any, a: Any, b: Any) -> Tuple[Any, Any]:
    """a and b as read-only views of their broadcast shape (binary_arrays checked it)."""
    n = max(a.ndim, b.ndim)
    sa, sb = (1,) * (n - a.ndim) + a.shape, (1,) * (n - b.ndim) + b.shape
    shape = tuple(y if x == 1 else x for x, y in zip(sa, sb))
    return xp.broadcast_to(a, shape), xp.broadcast_to(b, shape)


def fma(a: Any, b: Any, c: Any) -> Any:
    """a * b + c as torch's CPU kernels compute it (compiled with FMA contraction): in float32
    rounded once (through float64, whose product of two floats is exact); in float64 rounded
    twice (within an ulp of the fused result: fusing it would take a double-double product)."""
    if a.dtype.itemsize == 4:
        return (a.astype("float64") * b.astype("float64") + c.astype("float64")).astype("float32")
    return a * b + c


def libm(fn: Callable[[Any], Any], d: Any) -> Any:
    """fn(d) as the C library computes it in d's dtype: float32 through float64, rounded once
    (glibc's float functions are correctly rounded nearly always; NumPy's vectorized float32
    ones are not)."""
    if d.dtype.itemsize == 4:
        return fn(d.astype("float64")).astype("float32")
    return fn(d)


def _special(name: str, *arrays: Any) -> Any:
    """scipy.special.<name> (cupyx.scipy.special.<name> on CUDA) of float arrays of one dtype."""
    fn = special_kernels.function(name, arrays[0])
    if fn is None:
        raise NotImplementedError(f"{name}: this device's special-function library has none")
    return fn(*arrays)


# ---- the Bessel functions with gradients ---------------------------------------------------
def _tiny_safe(x: Tensor) -> Tuple[Tensor, Tensor]:
    """(|x| <= eps, x with its tiny entries replaced by eps): torch's guard of J1's and I1's
    gradients at 0, whose limit there is 1/2."""
    eps = _dtype.finfo(x.dtype).eps
    tiny = x.abs() <= eps
    return tiny, where(tiny, eps, x)


def _j1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    tiny, safe = _tiny_safe(saved.self)
    return g * where(tiny, 0.5, bessel_j0(safe) - saved.result * safe.reciprocal())


def _y1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    return g * where(x == 0, _INF, bessel_y0(x) - saved.result * x.reciprocal())


def _i1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    tiny, safe = _tiny_safe(saved.self)
    return g * where(tiny, 0.5, i0(safe) - saved.result * safe.reciprocal())


def _k1_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    x = saved.self
    return g * -(modified_bessel_k0(x) + saved.result * x.reciprocal())


def _j0_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * -bessel_j1(saved.self)


def _y0_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * -bessel_y1(saved.self)


def _i0_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * modified_bessel_i1(saved.self)


def _k0_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    return g * -modified_bessel_k1(saved.self)


J0 = node("SpecialBesselJ0Backward0", _j0_bw, saved=("self",))
J1 = node("SpecialBesselJ1Backward0", _j1_bw, saved=("self",), result=True)
Y0 = node("SpecialBesselY0Backward0", _y0_bw, saved=("self",))
Y1 = node("SpecialBesselY1Backward0", _y1_bw, saved=("self",), result=True)
I0 = node("SpecialModifiedBesselI0Backward0", _i0_bw, saved=("self",))
I1 = node("SpecialModifiedBesselI1Backward0", _i1_bw, saved=("self",), result=True)
K0 = node("SpecialModifiedBesselK0Backward0", _k0_bw, saved=("self",))
K1 = node("SpecialModifiedBesselK1Backward0", _k1_bw, saved=("self",), result=True)


def _exp_overflow(xp: Any, d: Any, out: Any, odd: bool) -> Any:
    """I0's and I1's values where torch's kernel overflows: it multiplies exp(|x|), computed
    in x's dtype, so float32 gives inf beyond |x| = 88.72 though the value is finite there."""
    t = d.dtype.type
    a = xp.abs(d.astype("float64"))
    big = (a > math.log(_dtype.finfo(_dtype.from_np(d.dtype)).max)) & (a != _INF)
    inf = xp.where(d < 0, t(-_INF), t(_INF)) if odd else t(_INF)
    return xp.where(big, inf, out)


def _bessel(kernel: str, input: Any, fn: Callable[[Any, Any], Any], spec: Any) -> Tensor:
    """fn(xp, d) of input's float array, recorded as spec's node (input saved as `self`)."""
    xp, d = unary_array(input, kernel)
    with quiet_fp(xp):
        out = fn(xp, d)
    return spec.record(out, (input,), self=input)


@op(special="bessel_j0", grad_fn="SpecialBesselJ0Backward0")
def bessel_j0(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 0, J0(input), elementwise.

    The gradient is -J1(input).

    Example::

        >>> rustgrad.special.bessel_j0(rustgrad.tensor([0., 1., 2.]))
        tensor([1.0000, 0.7652, 0.2239])
    """
    return _bessel("bessel_j0", input, lambda xp, d: _special("j0", d), J0)


@op(special="bessel_j1", grad_fn="SpecialBesselJ1Backward0")
def bessel_j1(input: Tensor) -> Tensor:
    """The Bessel function of the first kind of order 1, J1(input), elementwise.

    The gradient is J0(input) - J1(input) / input (1/2 where |input| <= eps, as torch's).

    Example::

        >>> rustgrad.special.bessel_j1(rustgrad.tensor([0., 1., -1.]))
        tensor([ 0.0000,  0.4401, -0.4401])
    """
    return _bessel("bessel_j1", input, lambda xp, d: _special("j1", d), J1)


@op(special="bessel_y0", grad_fn="SpecialBesselY0Backward0")
def bessel_y0(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 0, Y0(input), elementwise.

    -inf at 0, NaN for negative entries. The gradient is -Y1(input).

    Example::

        >>> rustgrad.special.bessel_y0(rustgrad.tensor([0., 1., -1.]))
        tensor([  -inf, 0.0883,    nan])
    """
    return _bessel("bessel_y0", input, lambda xp, d: _special("y0", d), Y0)


@op(special="bessel_y1", grad_fn="SpecialBesselY1Backward0")
def bessel_y1(input: Tensor) -> Tensor:
    """The Bessel function of the second kind of order 1, Y1(input), elementwise.

    -inf at 0, NaN for negative entries. The gradient is Y0(input) - Y1(input) / input (inf at
    0, as torch's).

    Example::

        >>> rustgrad.special.bessel_y1(rustgrad.tensor([0., 1., 2.]))
        tensor([   -inf, -0.7812, -0.1070])
    """
    return _bessel("bessel_y1", input, lambda xp, d: _special("y1", d), Y1)


@op(special="modified_bessel_i0", grad_fn="SpecialModifiedBesselI0Backward0")
def modified_bessel_i0(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 0, I0(input), elementwise.

    The values of `rustgrad.special.i0`; the gradient is I1(input).

    Example::

        >>> rustgrad.special.modified_bessel_i0(rustgrad.tensor([0., 1., -2.]))
        tensor([1.0000, 1.2661, 2.2796])
    """
    return _bessel("modified_bessel_i0", input,
                   lambda xp, d: _exp_overflow(xp, d, _special("i0", d), False), I0)


@op(special="modified_bessel_i1", grad_fn="SpecialModifiedBesselI1Backward0")
def modified_bessel_i1(input: Tensor) -> Tensor:
    """The modified Bessel function of the first kind of order 1, I1(input), elementwise.

    The gradient is I0(input) - I1(input) / input (1/2 where |input| <= eps, as torch's).

    Example::

        >>> rustgrad.special.modified_bessel_i1(rustgrad.tensor([0., 1., -2.]))
        tensor([ 0.0000,  0.5652, -1.5906])
    """
    return _bessel("modified_bessel_i1", input,
                   lambda xp, d: _exp_overflow(xp, d, _special("i1", d), True), I1)


@op(special="modified_bessel_k0", grad_fn="SpecialModifiedBesselK0Backward0")
def modified_bessel_k0(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 0, K0(input), elementwise.

    inf at 0, NaN for negative entries. The gradient is -K1(input).

    Example::

        >>> rustgrad.special.modified_bessel_k0(rustgrad.tensor([0., 1., 2.]))
        tensor([   inf, 0.4210, 0.1139])
    """
    return _bessel("modified_bessel_k0", input, lambda xp, d: _special("k0", d), K0)


@op(special="modified_bessel_k1", grad_fn="SpecialModifiedBesselK1Backward0")
def modified_bessel_k1(input: Tensor) -> Tensor:
    """The modified Bessel function of the second kind of order 1, K1(input), elementwise.

    inf at 0, NaN for negative entries. The gradient is -K0(input) - K1(input) / input.

    Example::

        >>> rustgrad.special.modified_bessel_k1(rustgrad.tensor([0., 1., 2.]))
        tensor([   inf, 0.6019, 0.1399])
    """
    return _bessel("modified_bessel_k1", input, lambda xp, d: _special("k1", d), K1)


# ---- without gradients -----------------------------------------------------------------------
def _constant(kernel: str, input: Any, fn: Callable[[Any, Any], Any]) -> Tensor:
    """fn(xp, d) of input's float array, as a result that never requires grad (torch has no
    derivative for these, and its results do not require grad)."""
    xp, d = unary_array(input, kernel)
    with quiet_fp(xp):
        return const(fn(xp, d))


@op(special="scaled_modified_bessel_k0")
def scaled_modified_bessel_k0(input: Tensor) -> Tensor:
    """exp(input) K0(input), the exponentially scaled modified Bessel function of order 0.

    Finite where K0 underflows; inf at 0, NaN for negative entries. It has no gradient (its
    result never requires grad, as torch's).

    Example::

        >>> rustgrad.special.scaled_modified_bessel_k0(rustgrad.tensor([1., 100.]))
        tensor([1.1445, 0.1252])
    """
    return _constant("scaled_modified_bessel_k0", input, lambda xp, d: _special("k0e", d))


@op(special="scaled_modified_bessel_k1")
def scaled_modified_bessel_k1(input: Tensor) -> Tensor:
    """exp(input) K1(input), the exponentially scaled modified Bessel function of order 1.

    inf at 0, NaN for negative entries. It has no gradient (its result never requires grad, as
    torch's).

    Example::

        >>> rustgrad.special.scaled_modified_bessel_k1(rustgrad.tensor([1., 100.]))
        tensor([1.6362, 0.1258])
    """
    return _constant("scaled_modified_bessel_k1", input, lambda xp, d: _special("k1e", d))


# spherical j0's Taylor series below 0.5: sin(x)/x = 1 + x^2 (-1/3! + x^2 (1/5! - ...))
_SINC_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 7))


def _spherical_j0_array(xp: Any, d: Any) -> Any:
    """sin(x) / x, by its Taylor series (Horner's, fused as torch's) where |x| < 0.5; 0 at
    +-inf."""
    t = d.dtype.type
    x2 = d * d
    acc = xp.full(d.shape, t(_SINC_SERIES[-1]), dtype=d.dtype)
    for c in reversed(_SINC_SERIES[:-1]):
        acc = fma(x2, acc, xp.asarray(t(c)))
    series = fma(x2, acc, xp.asarray(t(1)))
    out = xp.where(xp.abs(d) < 0.5, series, libm(xp.sin, d) / d)
    return xp.where(xp.isinf(d), t(0), out)


@op(special="spherical_bessel_j0")
def spherical_bessel_j0(input: Tensor) -> Tensor:
    """The spherical Bessel function of the first kind of order 0, sin(input) / input (1 at 0).

    It has no gradient (its result never requires grad, as torch's).

    Example::

        >>> rustgrad.special.spherical_bessel_j0(rustgrad.tensor([0., 1., 3.]))
        tensor([1.0000, 0.8415, 0.0470])
    """
    return _constant("spherical_bessel_j0", input, _spherical_j0_array)


# ---- airy_ai -------------------------------------------------------------------------------
# Ai(0) and -Ai'(0)
_AI0 = 0.355028053887817239260
_AIP0 = 0.258819403792806798405
# torch's Ai is 0 above this (its series' underflow bound); SciPy's underflows about there too
_AI_UNDERFLOW = 103.892
# the formulas' ranges: the Maclaurin series on (-7.5, 2], the K_1/3 integral above, the
# asymptotic expansion below (each within ~1e-11 of SciPy's Ai on its range)
_AI_SERIES_LOW, _AI_SERIES_HIGH = -7.5, 2.0
_AI_SERIES_TERMS = 40
_AI_NODES = 22
_AI_ASYMPTOTIC_TERMS = 16


def _airy_u() -> Tuple[float, ...]:
    """The coefficients u_k of Ai's asymptotic expansion (DLMF 9.7.2)."""
    u = [1.0]
    for k in range(1, 2 * _AI_ASYMPTOTIC_TERMS + 2):
        u.append(u[-1] * (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / ((2 * k - 1) * 216 * k))
    return tuple(u)


_AI_U = _airy_u()


def _airy_series(xp: Any, x: Any) -> Any:
    """Ai(x) = Ai(0) f(x) + Ai'(0) g(x), f and g the Maclaurin series of DLMF 9.4.1."""
    z = x * x * x
    tf = xp.ones_like(x)
    tg = x
    f, g = tf, tg
    for k in range(_AI_SERIES_TERMS):
        tf = tf * z / ((3 * k + 2) * (3 * k + 3))
        tg = tg * z / ((3 * k + 3) * (3 * k + 4))
        f = f + tf
        g = g + tg
    return _AI0 * f - _AIP0 * g


def _airy_positive(xp: Any, x: Any) -> Any:
    """Ai(x) for x > 0 as sqrt(x/3) / pi K_1/3(zeta), zeta = 2/3 x^3/2, with K_1/3(zeta) =
    e^-zeta integral over t > 0 of exp(-zeta (cosh t - 1)) cosh(t/3): the trapezoidal rule,
    its step shrinking as the integrand narrows with zeta (exact to ~1e-13 from x = 2 up)."""
    zeta = 2.0 / 3.0 * x * xp.sqrt(x)
    h = xp.minimum(0.2, 0.5 / xp.sqrt(zeta))
    acc = xp.full(x.shape, 0.5, dtype=x.dtype)
    for k in range(1, _AI_NODES + 1):
        t = h * k
        s = xp.sinh(t * 0.5)
        acc = acc + xp.exp(-2.0 * zeta * s * s) * xp.cosh(t / 3.0)
    return xp.sqrt(x / 3.0) / math.pi * xp.exp(-zeta) * (h * acc)


def _airy_negative(xp: Any, x: Any) -> Any:
    """Ai(x) for x < 0 by its asymptotic expansion (DLMF 9.7.9), for -x large."""
    z = -x
    zeta = 2.0 / 3.0 * z * xp.sqrt(z)
    iz2 = 1.0 / (zeta * zeta)
    p = xp.zeros_like(z)
    q = xp.zeros_like(z)
    for k in range(_AI_ASYMPTOTIC_TERMS, -1, -1):
        p = p * iz2 + (-1) ** k * _AI_U[2 * k]
        q = q * iz2 + (-1) ** k * _AI_U[2 * k + 1]
    theta = zeta - math.pi / 4
    return (xp.cos(theta) * p + xp.sin(theta) * q / zeta) / (math.sqrt(math.pi) * z ** 0.25)


def _airy_formula(xp: Any, x: Any) -> Any:
    """Ai of a float64 array from the three formulas above, each on its range."""
    series = (x > _AI_SERIES_LOW) & (x <= _AI_SERIES_HIGH)
    out = _airy_series(xp, xp.where(series, x, 0.0))
    out = xp.where(x > _AI_SERIES_HIGH,
                   _airy_positive(xp, xp.where(x > _AI_SERIES_HIGH, x, 1.0)), out)
    return xp.where(x <= _AI_SERIES_LOW,
                    _airy_negative(xp, xp.where(x <= _AI_SERIES_LOW, x, -1.0)), out)


def _airy_array(xp: Any, d: Any) -> Any:
    x = d.astype("float64")
    scipy_airy = special_kernels.function("airy", d)
    if scipy_airy is None:  # CuPy has none
        out = _airy_formula(xp, xp.where(xp.isfinite(x), x, 0.0))
    else:  # SciPy's Ai is NaN below x ~ -1.2e6: its asymptotic expansion there
        out = scipy_airy(x)[0]
        far = xp.isnan(out) & (x < 0)
        out = xp.where(far, _airy_negative(xp, xp.where(far, x, -1.0)), out)
    out = xp.where(x > _AI_UNDERFLOW, 0.0, out)
    return xp.where(xp.isfinite(x), out, _NAN).astype(d.dtype)


@op(special="airy_ai")
def airy_ai(input: Tensor) -> Tensor:
    """The Airy function Ai(input), elementwise (0 above 103.892, NaN at +-inf, as torch's).

    It has no gradient (its result never requires grad, as torch's).

    Example::

        >>> rustgrad.special.airy_ai(rustgrad.tensor([0., 1., -2.]))
        tensor([0.3550, 0.1353, 0.2274])
    """
    return _constant("airy_ai", input, _airy_array)


# ---- zeta ------------------------------------------------------------------------------------
def _not_implemented() -> NotImplementedError:
    return NotImplementedError("the derivative for 'zeta' is not implemented.")


def _zeta_bw(g: Tensor, saved: Any, ctx: Any) -> Any:
    # torch has no derivative in x; in q it is -x zeta(x + 1, q)
    x, q = saved.self, saved.other
    if x.requires_grad:
        raise _not_implemented()
    return None, g * -x * zeta(x + 1.0, q)


def _zeta_number_x_bw(g: Tensor, saved: Any, x: Any) -> Any:
    return None, g * -x * zeta(x + 1.0, saved.other)


def _zeta_number_q_bw(g: Tensor, saved: Any, q: Any) -> Any:
    raise _not_implemented()  # the node exists only when x requires grad


ZETA = (node("SpecialZetaBackward0", _zeta_bw, saved=("self", "other")),
        node("SpecialZetaBackward1", _zeta_number_x_bw, saved=("other",),
             getters={"self": lambda s, c: c}),
        node("SpecialZetaBackward2", _zeta_number_q_bw))




@op(special="zeta", grad_fn=("SpecialZetaBackward0", "SpecialZetaBackward1",
                             "SpecialZetaBackward2"))
def zeta(input: Any, other: Any) -> Tensor:
    """The Hurwitz zeta function, sum over k >= 0 of (k + other)^-input, elementwise, broadcast.

    Args:
        input (Tensor or Number): the exponents x (1 gives inf, below 1 NaN).
        other (Tensor or Number): the offsets q (other = 1 is the Riemann zeta function).

    Integer inputs give the default float dtype. The gradient in other is
    -input zeta(input + 1, other); torch has none in input (backward raises when input requires
    grad).

    Example::

        >>> rustgrad.special.zeta(rustgrad.tensor([2., 4.]), 1)
        tensor([1.6449, 1.0823])
        >>> rustgrad.special.zeta(2, rustgrad.tensor([1., 2.]))
        tensor([1.6449, 0.6449])
    """
    xp, a, b = binary_arrays("zeta", input, other, ("input", "other"), "self")
    x, q = broadcast(xp, a, b)
    with quiet_fp(xp):
        out = _special("zeta", x, q)
        # torch's zeta is NaN at q = +inf (x > 1) and at x = +inf (q > 1); SciPy's 0 there
        nan = ((q == _INF) & (x > 1)) | ((x == _INF) & (q > 1))
        out = xp.where(nan, out.dtype.type(_NAN), out)
    both, number_x, number_q = ZETA
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        return both.record(out, (input, other), self=input, other=other)
    if isinstance(other, Tensor):
        return number_x.record(out, (None, other), as_scalar(input), other=other)
    return number_q.record(out, (input, None), as_scalar(other))
