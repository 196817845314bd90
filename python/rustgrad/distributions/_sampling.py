"""Samplers rustgrad has no op for (torch's _standard_gamma, poisson, binomial), written as
vectorized rejection or counting loops over rustgrad's uniform and normal draws, so they follow
rustgrad's generator (manual_seed) and run on any device.

Each works in float64 and returns the parameter's dtype; none records autograd history (the
callers run them under no_grad or detach their parameters). A loop ends when every entry is
accepted; entries whose parameter is not finite are settled at once (to NaN or inf), so that
no input can keep a loop running."""

from __future__ import annotations

import math

from . import _rg as rg
from ._rg import Tensor
from .utils import broadcast_shapes

# a safety net only: each round accepts most of what is left (rejection rates below 10%)
_MAX_ROUNDS = 10_000


def _draw(kind: str, like: Tensor) -> Tensor:
    if kind == "rand":
        return rg.rand(like.shape, dtype=rg.float64, device=like.device)
    return rg.randn(like.shape, dtype=rg.float64, device=like.device)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Gamma(concentration, 1) samples of concentration's shape (Marsaglia and Tsang's method;
    a concentration a < 1 draws Gamma(a + 1) times U ** (1 / a))."""
    given = concentration.detach().to(rg.float64)
    bad = ~(given.isfinite() & (given >= 0))
    a = rg.where(bad, 1.0, given)  # drawn as for 1, then replaced: inf stays inf, the rest NaN
    small = a < 1
    a1 = rg.where(small, a + 1, a)
    d = a1 - 1.0 / 3.0
    c = (9.0 * d).rsqrt()
    out = rg.zeros_like(a)
    done = bad
    for _ in range(_MAX_ROUNDS):
        if bool(done.all()):
            break
        x = _draw("randn", a)
        v = (1.0 + c * x) ** 3
        u = _draw("rand", a)
        log_v = v.clamp(min=1e-300).log()
        ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * log_v) & ~done
        out = rg.where(ok, d * v, out)
        done = done | ok
    boost = _draw("rand", a) ** (1.0 / a.clamp(min=1e-300))
    out = rg.where(small, out * boost, out)
    out = rg.where(bad, rg.where(given == math.inf, math.inf, math.nan), out)
    finfo = rg.finfo(concentration.dtype)
    return out.to(concentration.dtype).clamp(min=finfo.tiny)


def _log_factorial(k: Tensor) -> Tensor:
    return rg.lgamma(k + 1.0)


def poisson(rate: Tensor) -> Tensor:
    """Poisson(rate) samples of rate's shape: for a rate below 10 the number of unit-rate
    exponential arrivals before the rate; otherwise Hormann's transformed rejection (PTRS)."""
    lam = rate.detach().to(rg.float64)
    bad = ~lam.isfinite() | (lam < 0)
    lam = rg.where(bad, 0.0, lam)
    small = lam < 10
    # counting: arrivals until their total time exceeds lam
    count = rg.zeros_like(lam)
    elapsed = rg.zeros_like(lam)
    active = small & (lam > 0)
    for _ in range(_MAX_ROUNDS):
        if not bool(active.any()):
            break
        elapsed = elapsed - _draw("rand", lam).neg().log1p()  # += Exp(1)
        arrived = active & (elapsed <= lam)
        count = count + arrived.to(rg.float64)
        active = arrived
    # PTRS for the rest
    big = lam >= 10
    safe = rg.where(big, lam, 10.0)
    slam = safe.sqrt()
    loglam = safe.log()
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)
    out = count
    pending = big
    for _ in range(_MAX_ROUNDS):
        if not bool(pending.any()):
            break
        u = _draw("rand", lam) - 0.5
        v = _draw("rand", lam)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + safe + 0.43).floor()
        quick = (us >= 0.07) & (v <= v_r)
        valid = (k >= 0) & ~((us < 0.013) & (v > us))
        lhs = (v * inv_alpha / (a / (us * us) + b)).log()
        rhs = -safe + k * loglam - _log_factorial(k.clamp(min=0))
        ok = pending & (quick | (valid & (lhs <= rhs)))
        out = rg.where(ok, k, out)
        pending = pending & ~ok
    out = rg.where(bad, math.nan, out)
    return out.to(rate.dtype)


def binomial(total_count: Tensor, probs: Tensor) -> Tensor:
    """Binomial(total_count, probs) samples of their broadcast shape: for a mean (of the
    smaller of p, 1 - p) below 10 by counting geometric gaps between successes; otherwise
    Hormann's transformed rejection (BTRS)."""
    n = total_count.detach().to(rg.float64)
    p = probs.detach().to(rg.float64)
    shape = broadcast_shapes(n.shape, p.shape)
    n, p = n.expand(shape), p.expand(shape)
    bad = ~(n.isfinite() & (n >= 0) & (p >= 0) & (p <= 1))
    n = rg.where(bad, 0.0, n)
    flip = p > 0.5
    q = rg.where(flip, 1 - p, p)
    q = rg.where(bad, 0.0, q)
    small = n * q < 10
    # counting: successes are the trials at which the geometric gaps land, up to n
    count = rg.zeros_like(n)
    position = rg.zeros_like(n)
    active = small & (q > 0) & (n > 0)
    log_fail = rg.where(active, -q, -0.5).log1p()  # log(1 - q), kept finite where unused
    for _ in range(_MAX_ROUNDS):
        if not bool(active.any()):
            break
        u = _draw("rand", n).neg().log1p()  # log(1 - U), U in [0, 1): finite
        gap = (u / log_fail).floor() + 1
        position = position + gap
        hit = active & (position <= n)
        count = count + hit.to(rg.float64)
        active = hit
    # BTRS for the rest
    big = ~small
    qs = rg.where(big, q, 0.5)
    ns = rg.where(big, n, 40.0)
    spq = (ns * qs * (1 - qs)).sqrt()
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * qs
    c = ns * qs + 0.5
    v_r = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = (qs / (1 - qs)).log()
    m = ((ns + 1) * qs).floor()
    h = _log_factorial(m) + _log_factorial(ns - m)
    out = count
    pending = big
    for _ in range(_MAX_ROUNDS):
        if not bool(pending.any()):
            break
        u = _draw("rand", n) - 0.5
        v = _draw("rand", n)
        us = 0.5 - u.abs()
        k = ((2 * a / us + b) * u + c).floor()
        inside = (k >= 0) & (k <= ns)
        quick = inside & (us >= 0.07) & (v <= v_r)
        kk = k.clamp(min=0).minimum(ns)
        lhs = (v * alpha / (a / (us * us) + b)).log()
        rhs = h - _log_factorial(kk) - _log_factorial(ns - kk) + (kk - m) * lpq
        ok = pending & (quick | (inside & (lhs <= rhs)))
        out = rg.where(ok, k, out)
        pending = pending & ~ok
    out = rg.where(flip, n - out, out)
    out = rg.where(bad, math.nan, out)
    return out.to(probs.dtype)

