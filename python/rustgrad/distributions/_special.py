"""Special functions the distributions need beyond rustgrad's ops: the regularized lower
incomplete gamma function P(a, x) (Gamma's and Chi2's cdf, torch.special.gammainc) and the
implicit reparameterization gradient of Gamma samples (torch's _standard_gamma_grad).

P is computed in float64 by its power series below a + 1 and by the continued fraction of the
complement Q = 1 - P above (the classical split: each converges fastest on its side, and each
keeps relative accuracy in its own tail), then cast back. gammainc is differentiable in x (the
derivative is the Gamma density); as torch's igamma, not in a.

A Gamma(a, 1) sample x moves with a along the curve P(a, x) = u (u its fixed uniform rank), so
dx/da = -(dP/da) / (dP/dx) (Figurnov et al., 2018). dP/dx is the density; dP/da has no closed
form and is taken here by a central difference of the same series or fraction (relative step
1e-5: truncation and rounding errors both near 1e-10), on the tail that represents P accurately
at (a, x)."""

from __future__ import annotations

import math
from typing import Any, Tuple

from ..autograd import Function
from . import _rg as rg
from ._rg import Tensor
from .utils import broadcast_shapes

_MAX_ITER = 5000
# the convergence test: a few float64 ulps (a ratio that must reach exactly 1 +- 1e-16 may
# hover one ulp away for ever)
_EPS = 1e-15
_TINY = 1e-300


def _series(a: Tensor, x: Tensor) -> Tensor:
    """P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))."""
    term = rg.ones_like(x)
    total = rg.ones_like(x)
    denom = a.clone()
    for i in range(_MAX_ITER):
        denom = denom + 1
        term = term * x / denom
        total = total + term
        if i % 16 == 15 and not bool((term.abs() > total.abs() * _EPS).any()):
            break
    return total * (a * x.log() - x - rg.lgamma(a + 1)).exp()


def _continued_fraction(a: Tensor, x: Tensor) -> Tensor:
    """Q(a, x) = 1 - P(a, x) by Lentz's evaluation of the continued fraction
    e^-x x^a / Gamma(a) * 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - ...))."""
    b = x + 1 - a
    c = rg.full_like(x, 1 / _TINY)
    d = 1 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = rg.where(d.abs() < _TINY, _TINY, d)
        c = b + an / c
        c = rg.where(c.abs() < _TINY, _TINY, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 16 == 15 and not bool(((delta - 1).abs() > _EPS).any()):
            break
    return (a * x.log() - x - rg.lgamma(a)).exp() * h


def _gammainc(a: Tensor, x: Tensor) -> Tensor:
    a64, x64 = a.to(rg.float64), x.to(rg.float64)
    use_series = x64 < a64 + 1
    # each branch on safe inputs where the other one is taken
    ok = (x64 > 0) & (a64 > 0) & x64.isfinite() & a64.isfinite()
    xs = rg.where(use_series & ok, x64, 0.5)
    xc = rg.where(use_series | ~ok, a64.clamp(min=0) + 2, x64)
    a64 = rg.where(ok, a64, 1.0)
    p = rg.where(use_series, _series(a64, xs), 1 - _continued_fraction(a64, xc))
    a_in, x_in = a.to(rg.float64), x.to(rg.float64)
    p = rg.where(x_in == 0, 0.0, p)
    p = rg.where(x_in == math.inf, 1.0, p)
    p = rg.where((a_in == 0) & (x_in > 0), 1.0, p)  # the limit a -> 0, as torch gives it
    p = rg.where(a_in.isnan() | x_in.isnan() | (a_in < 0) | (x_in < 0), math.nan, p)
    return p.to(x.dtype)


def _tail(a: Tensor, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """(lower, xs, xc): where P is taken from its series (else Q from its fraction), and x made
    safe for each (the other branch's entries replaced by harmless values)."""
    lower = x < a + 1
    return lower, rg.where(lower, x, 0.5), rg.where(lower, a + 2, x)


def standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """dx/dalpha for Gamma(alpha, 1) samples x: the implicit reparameterization gradient."""
    a = alpha.detach().to(rg.float64)
    xx = x.detach().to(rg.float64).clamp(min=_TINY)
    lower, xs, xc = _tail(a, xx)
    h = a * 1e-5

    def tail(at: Tensor) -> Tensor:
        # P, or -Q (the same derivative in a) where Q is the accurate one
        return rg.where(lower, _series(at, xs), -_continued_fraction(at, xc))

    dp_da = (tail(a + h) - tail(a - h)) / (2 * h)
    density = ((a - 1) * xx.log() - xx - rg.lgamma(a)).exp()
    return (-dp_da / density).to(x.dtype)


class _StandardGamma(Function):
    """Gamma(alpha, 1) samples whose gradient in alpha is the implicit one."""

    @staticmethod
    def forward(ctx: Any, alpha: Tensor) -> Tensor:
        from ._sampling import standard_gamma

        x = standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        alpha, x = ctx.saved_tensors
        return grad * standard_gamma_grad(alpha, x)


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) samples of alpha's shape, reparameterized: differentiable in alpha."""
    return _StandardGamma.apply(alpha)


class _GammaInc(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, x: Tensor) -> Tensor:
        ctx.save_for_backward(a, x)
        return _gammainc(a, x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Any, Any]:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
        # dP/dx is the Gamma(a, 1) density
        density = ((a - 1) * x.log() - x - rg.lgamma(a)).exp()
        return None, grad * density


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x), broadcast."""
    shape = broadcast_shapes(a.shape, x.shape)
    return _GammaInc.apply(a.expand(shape), x.expand(shape))
