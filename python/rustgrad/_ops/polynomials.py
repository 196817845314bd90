"""torch.special's orthogonal polynomials P_n(x): Chebyshev's T, U, V, W and their shifted forms,
Hermite's H (physicists') and He (probabilists'), Laguerre's L and Legendre's P.

Each takes (x, n), tensors or one of them a number, broadcast, in their promoted float dtype
(integer and bool operands give the default float dtype; float16/bfloat16 are refused, as
torch's kernels refuse them). They are evaluated as torch evaluates them, so that the values
agree with torch's (to the bit for float32's recurrences, within a few ulps elsewhere): n is
truncated to an integer (1.9 is 1; NaN, +-inf and |n| >= 2^63 are taken as negative); n < 0
gives 0; then each polynomial's exact values at the ends of its interval; the Chebyshev ones
by their trigonometric form where |x| < 1 and n is above a few; else the three-term
recurrence, n steps of it, fused multiply-adds as torch's compiled kernels (exact in float32,
rounded twice in float64). Its cost is linear in n, as torch's: a lane whose value turns NaN
stops early.

They have no gradients: their results never require grad, as torch's."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from .._tensor import Tensor
from ._declare import op
from ._util import const, quiet_fp
from .special_functions import binary_arrays, broadcast, fma, libm

# a recurrence checks every CHUNK steps which lanes are done (n reached, or NaN) and drops them
_CHUNK = 64
Cases = List[Tuple[Any, Any]]


def _degree(xp: Any, n: Any) -> Any:
    """n's float array as torch's int64 cast gives it on the CPU: truncated; NaN, +-inf and
    values outside the int64 range as -1 (x86 gives INT64_MIN: a negative degree)."""
    ok = xp.isfinite(n) & (xp.abs(n) < 2.0 ** 63)
    return xp.where(ok, xp.trunc(xp.where(ok, n, 0)), -1).astype("int64")


def _recurrence(xp: Any, x: Any, n: Any, first: Any, step: Callable[..., Any], lanes: Any
                ) -> Any:
    """P_n(x) on `lanes` (n >= 2 there) by the recurrence from P_0 = 1, P_1 = first:
    P_j = step(x, j, P_j-2, P_j-1); other entries are `first`."""
    out = first.copy()
    idx = xp.nonzero(lanes.reshape(-1))[0]
    if idx.size == 0:
        return out
    flat = out.reshape(-1)
    xs, ns = x.reshape(-1)[idx], n.reshape(-1)[idx]
    p, q = xp.ones_like(xs), flat[idx]
    j, top = 2, int(ns.max())
    while True:
        stop = min(top, j + _CHUNK - 1)
        for k in range(j, stop + 1):
            r = step(xs, k, p, q)
            go = ns >= k
            p, q = xp.where(go, q, p), xp.where(go, r, q)
        j = stop + 1
        done = (ns < j) | xp.isnan(q)
        flat[idx[done]] = q[done]
        keep = ~done
        if not bool(keep.any()):
            return out
        idx, xs, ns, p, q = idx[keep], xs[keep], ns[keep], p[keep], q[keep]
        top = int(ns.max())


def _evaluate(xp: Any, x: Any, n: Any, first: Any, step: Callable[..., Any], cases: Cases,
              closed: Optional[Tuple[Any, Any]] = None) -> Any:
    """torch's order of evaluation: n < 0 gives 0; then each (mask, value) of `cases`, in
    order; then `closed` (mask, value); n == 0 gives 1, n == 1 `first`; the recurrence on the
    rest."""
    t = x.dtype.type
    special = n < 0
    for mask, _ in cases:
        special = special | mask
    if closed is not None:
        special = special | closed[0]
    out = _recurrence(xp, x, n, first, step, (n >= 2) & ~special)
    out = xp.where(n == 0, t(1), out)
    if closed is not None:
        out = xp.where(closed[0], closed[1], out)
    for mask, value in reversed(cases):
        out = xp.where(mask, value, out)
    return xp.where(n < 0, t(0), out)


def _polynomial(kernel: str, x: Any, n: Any, body: Callable[..., Any]) -> Tensor:
    """body(xp, x, n, nf, odd) of the broadcast operands (n truncated; nf its float value; odd
    whether it is odd), as a result that never requires grad."""
    xp, a, b = binary_arrays(kernel, x, n)
    a, b = broadcast(xp, a, b)
    with quiet_fp(xp):
        deg = _degree(xp, b)
        nf = deg.astype(a.dtype)
        out = body(xp, a, deg, nf, (deg % 2) == 1)
    return const(out.astype(a.dtype, copy=False))


def _signed(xp: Any, odd: Any, value: Any) -> Any:
    return xp.where(odd, -value, value)


# ---- the Chebyshev polynomials ---------------------------------------------------------------
def _chebyshev_step(x: Any, j: int, p: Any, q: Any) -> Any:
    return fma(x + x, q, -p)


def _trig(xp: Any, x: Any, n: Any, cut: int) -> Tuple[Any, Any]:
    """(mask of the entries torch evaluates by the trigonometric form, acos(x))."""
    return (n > cut) & (xp.abs(x) < 1), libm(xp.arccos, x)


def _cheb_t(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    ends = (xp.abs(x) == 1, xp.where((x > 0) | ~odd, t(1), t(-1)))
    mask, a = _trig(xp, x, n, 6)
    return _evaluate(xp, x, n, x, _chebyshev_step, [ends],
                     (mask, libm(xp.cos, nf * a)))


def _cheb_u(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    ends = (xp.abs(x) == 1, xp.where(x > 0, nf + 1, _signed(xp, odd, nf + 1)))
    mask, a = _trig(xp, x, n, 8)
    s = libm(xp.sin, a)
    m = (nf + 1) * a
    closed = xp.where(s != 0, libm(xp.sin, m) / s, (nf + 1) * libm(xp.cos, m) * x)
    return _evaluate(xp, x, n, x + x, _chebyshev_step, [ends], (mask, closed))


def _half_angle(xp: Any, nf: Any, a: Any, fn: Any, den_fn: Any) -> Any:
    """fn((n + 1/2) a) / den_fn(a / 2), V's and W's trigonometric forms."""
    return libm(fn, (nf + nf.dtype.type(0.5)) * a) / libm(den_fn, a / 2)


def _cheb_v(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    at_minus_one = _signed(xp, odd, nf + nf + 1)
    ends = (xp.abs(x) == 1, xp.where(x > 0, t(1), at_minus_one))
    mask, a = _trig(xp, x, n, 8)
    closed = xp.where(libm(xp.sin, a / 2) != 1, _half_angle(xp, nf, a, xp.cos, xp.cos),
                      at_minus_one)
    return _evaluate(xp, x, n, x + x - t(1), _chebyshev_step, [ends], (mask, closed))


def _cheb_w(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    value = xp.where(x > 0, nf + nf + 1, xp.where(odd, t(-1), t(1)))
    mask, a = _trig(xp, x, n, 8)
    closed = xp.where(libm(xp.cos, a / 2) != 1, _half_angle(xp, nf, a, xp.sin, xp.sin), value)
    return _evaluate(xp, x, n, x + x + t(1), _chebyshev_step, [(xp.abs(x) == 1, value)],
                     (mask, closed))


@op(special="chebyshev_polynomial_t")
def chebyshev_polynomial_t(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(x), elementwise, broadcast.

    Args:
        x (Tensor or Number): the points.
        n (Tensor or Number): the degrees, truncated to integers (negative ones give 0).

    cos(n acos(x)) where |x| < 1 and n > 6, as torch evaluates it; else the recurrence
    T_n = 2x T_n-1 - T_n-2. It has no gradient (its result never requires grad, as torch's).

    Example::

        >>> rustgrad.special.chebyshev_polynomial_t(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-1., 26.])
    """
    return _polynomial("chebyshev_polynomial_t", x, n, _cheb_t)


@op(special="chebyshev_polynomial_u", args_like=chebyshev_polynomial_t)
def chebyshev_polynomial_u(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(x), elementwise, broadcast.

    sin((n + 1) acos(x)) / sin(acos(x)) where |x| < 1 and n > 8; else the recurrence
    U_n = 2x U_n-1 - U_n-2 from U_1 = 2x. It has no gradient, as torch's.

    Example::

        >>> rustgrad.special.chebyshev_polynomial_u(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-1., 56.])
    """
    return _polynomial("chebyshev_polynomial_u", x, n, _cheb_u)


@op(special="chebyshev_polynomial_v", args_like=chebyshev_polynomial_t)
def chebyshev_polynomial_v(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(x), elementwise, broadcast.

    cos((n + 1/2) acos(x)) / cos(acos(x) / 2) where |x| < 1 and n > 8; else the recurrence
    from V_1 = 2x - 1. It has no gradient, as torch's.

    Example::

        >>> rustgrad.special.chebyshev_polynomial_v(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-1., 41.])
    """
    return _polynomial("chebyshev_polynomial_v", x, n, _cheb_v)


@op(special="chebyshev_polynomial_w", args_like=chebyshev_polynomial_t)
def chebyshev_polynomial_w(x: Any, n: Any) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(x), elementwise, broadcast.

    sin((n + 1/2) acos(x)) / sin(acos(x) / 2) where |x| < 1 and n > 8; else the recurrence
    from W_1 = 2x + 1. It has no gradient, as torch's.

    Example::

        >>> rustgrad.special.chebyshev_polynomial_w(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-1., 71.])
    """
    return _polynomial("chebyshev_polynomial_w", x, n, _cheb_w)


# ---- the shifted Chebyshev polynomials: of 2x - 1, on [0, 1] ----------------------------------
def _shifted_step(x: Any, j: int, p: Any, q: Any) -> Any:
    y = x + x - x.dtype.type(1)
    return fma(y + y, q, -p)


def _shifted(xp: Any, x: Any, n: Any, cut: int) -> Tuple[Any, Any, Any]:
    """(y = 2x - 1, the trigonometric form's mask, acos(y))."""
    y = x + x - x.dtype.type(1)
    return y, (n > cut) & (xp.abs(y) < 1), libm(xp.arccos, y)


def _shifted_t(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    y, mask, a = _shifted(xp, x, n, 6)
    cases = [(x == 1, xp.ones_like(x)), (x == 0, xp.where(odd, t(-1), t(1)))]
    return _evaluate(xp, x, n, y, _shifted_step, cases, (mask, libm(xp.cos, nf * a)))


def _shifted_u(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    y, mask, a = _shifted(xp, x, n, 6)
    s = libm(xp.sin, a)
    m = (nf + 1) * a
    closed = xp.where(s != 0, libm(xp.sin, m) / s, (nf + 1) * libm(xp.cos, m) * y)
    cases = [(x == 1, nf + 1), (x == 0, _signed(xp, odd, nf + 1))]
    return _evaluate(xp, x, n, y + y, _shifted_step, cases, (mask, closed))


def _shifted_v(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    y, mask, a = _shifted(xp, x, n, 6)
    at_zero = _signed(xp, odd, nf + nf + 1)
    closed = xp.where(libm(xp.sin, a / 2) != 1, _half_angle(xp, nf, a, xp.cos, xp.cos), at_zero)
    cases = [(x == 1, xp.ones_like(x)), (x == 0, at_zero)]
    return _evaluate(xp, x, n, y + y - t(1), _shifted_step, cases, (mask, closed))


def _shifted_w(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    y, mask, a = _shifted(xp, x, n, 4)
    at_zero = xp.where(odd, t(-1), t(1))
    # where cos(acos(2x - 1) / 2) rounds to 1 (x just below 1) torch gives W*_n(0), not W*_n(1)
    closed = xp.where(libm(xp.cos, a / 2) != 1, _half_angle(xp, nf, a, xp.sin, xp.sin), at_zero)
    cases = [(x == 1, nf + nf + 1), (x == 0, at_zero)]
    return _evaluate(xp, x, n, y + y + t(1), _shifted_step, cases, (mask, closed))


@op(special="shifted_chebyshev_polynomial_t", args_like=chebyshev_polynomial_t)
def shifted_chebyshev_polynomial_t(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the first kind T*_n(x) = T_n(2x - 1), elementwise.

    Evaluated as torch evaluates it (its trigonometric form where |2x - 1| < 1 and n > 6). It
    has no gradient, as torch's.

    Example::

        >>> rustgrad.special.shifted_chebyshev_polynomial_t(rustgrad.tensor([0.25, 2.]), 3)
        tensor([ 1., 99.])
    """
    return _polynomial("shifted_chebyshev_polynomial_t", x, n, _shifted_t)


@op(special="shifted_chebyshev_polynomial_u", args_like=chebyshev_polynomial_t)
def shifted_chebyshev_polynomial_u(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the second kind U*_n(x) = U_n(2x - 1), elementwise.

    Evaluated as torch evaluates it (its trigonometric form where |2x - 1| < 1 and n > 6). It
    has no gradient, as torch's.

    Example::

        >>> rustgrad.special.shifted_chebyshev_polynomial_u(rustgrad.tensor([0.25, 2.]), 3)
        tensor([  1., 204.])
    """
    return _polynomial("shifted_chebyshev_polynomial_u", x, n, _shifted_u)


@op(special="shifted_chebyshev_polynomial_v", args_like=chebyshev_polynomial_t)
def shifted_chebyshev_polynomial_v(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the third kind V*_n(x) = V_n(2x - 1), elementwise.

    Evaluated as torch evaluates it (its trigonometric form where |2x - 1| < 1 and n > 6). It
    has no gradient, as torch's.

    Example::

        >>> rustgrad.special.shifted_chebyshev_polynomial_v(rustgrad.tensor([0.25, 2.]), 3)
        tensor([  1., 169.])
    """
    return _polynomial("shifted_chebyshev_polynomial_v", x, n, _shifted_v)


@op(special="shifted_chebyshev_polynomial_w", args_like=chebyshev_polynomial_t)
def shifted_chebyshev_polynomial_w(x: Any, n: Any) -> Tensor:
    """The shifted Chebyshev polynomial of the fourth kind W*_n(x) = W_n(2x - 1), elementwise.

    Evaluated as torch evaluates it (its trigonometric form where |2x - 1| < 1 and n > 4). It
    has no gradient, as torch's.

    Example::

        >>> rustgrad.special.shifted_chebyshev_polynomial_w(rustgrad.tensor([0.25, 2.]), 3)
        tensor([  1., 239.])
    """
    return _polynomial("shifted_chebyshev_polynomial_w", x, n, _shifted_w)


# ---- Hermite, Laguerre, Legendre --------------------------------------------------------------
def _hermite_h_step(x: Any, j: int, p: Any, q: Any) -> Any:
    # H_j = 2x H_j-1 - 2(j - 1) H_j-2
    return fma(x + x, q, -(x.dtype.type(2 * (j - 1)) * p))


def _hermite_he_step(x: Any, j: int, p: Any, q: Any) -> Any:
    # He_j = x He_j-1 - (j - 1) He_j-2
    return fma(x, q, -(x.dtype.type(j - 1) * p))


def _laguerre_step(x: Any, j: int, p: Any, q: Any) -> Any:
    # L_j = ((2k + 1 - x) L_j-1 - k L_j-2) / (k + 1), k = j - 1
    t = x.dtype.type
    k = t(j - 1)
    return fma((k + k) + (t(1) - x), q, -(k * p)) / (k + t(1))


def _legendre_step(x: Any, j: int, p: Any, q: Any) -> Any:
    # P_j = ((2k + 1) x P_j-1 - k P_j-2) / (k + 1), k = j - 1
    t = x.dtype.type
    k = t(j - 1)
    return fma((k + k + t(1)) * x, q, -(k * p)) / (k + t(1))


@op(special="hermite_polynomial_h", args_like=chebyshev_polynomial_t)
def hermite_polynomial_h(x: Any, n: Any) -> Tensor:
    """The physicists' Hermite polynomial H_n(x), elementwise, broadcast.

    By the recurrence H_n = 2x H_n-1 - 2(n - 1) H_n-2. It has no gradient, as torch's.

    Example::

        >>> rustgrad.special.hermite_polynomial_h(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-5., 40.])
    """
    return _polynomial("hermite_polynomial_h", x, n,
                       lambda xp, a, d, nf, odd: _evaluate(xp, a, d, a + a, _hermite_h_step, []))


@op(special="hermite_polynomial_he", args_like=chebyshev_polynomial_t)
def hermite_polynomial_he(x: Any, n: Any) -> Tensor:
    """The probabilists' Hermite polynomial He_n(x), elementwise, broadcast.

    By the recurrence He_n = x He_n-1 - (n - 1) He_n-2. It has no gradient, as torch's.

    Example::

        >>> rustgrad.special.hermite_polynomial_he(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-1.3750,  2.0000])
    """
    return _polynomial("hermite_polynomial_he", x, n,
                       lambda xp, a, d, nf, odd: _evaluate(xp, a, d, a, _hermite_he_step, []))


def _laguerre(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    return _evaluate(xp, x, n, t(1) - x, _laguerre_step, [(x == 0, xp.ones_like(x))])


def _legendre(xp: Any, x: Any, n: Any, nf: Any, odd: Any) -> Any:
    t = x.dtype.type
    ends = (xp.abs(x) == 1, xp.where((x > 0) | ~odd, t(1), t(-1)))
    return _evaluate(xp, x, n, x, _legendre_step, [ends])


@op(special="laguerre_polynomial_l", args_like=chebyshev_polynomial_t)
def laguerre_polynomial_l(x: Any, n: Any) -> Tensor:
    """The Laguerre polynomial L_n(x), elementwise, broadcast (1 at x = 0).

    By the recurrence L_n = ((2n - 1 - x) L_n-1 - (n - 1) L_n-2) / n. It has no gradient, as
    torch's.

    Example::

        >>> rustgrad.special.laguerre_polynomial_l(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-0.1458, -0.3333])
    """
    return _polynomial("laguerre_polynomial_l", x, n, _laguerre)


@op(special="legendre_polynomial_p", args_like=chebyshev_polynomial_t)
def legendre_polynomial_p(x: Any, n: Any) -> Tensor:
    """The Legendre polynomial P_n(x), elementwise, broadcast.

    By the recurrence P_n = ((2n - 1) x P_n-1 - (n - 1) P_n-2) / n (exactly +-1 at x = +-1). It
    has no gradient, as torch's.

    Example::

        >>> rustgrad.special.legendre_polynomial_p(rustgrad.tensor([0.5, 2.]), 3)
        tensor([-0.4375, 17.0000])
    """
    return _polynomial("legendre_polynomial_p", x, n, _legendre)
