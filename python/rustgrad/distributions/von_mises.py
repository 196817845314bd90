"""VonMises: the circular normal distribution of an angle."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz and Stegun,
# Handbook of Mathematical Functions, 9.8.1 to 9.8.4): below x = 3.75 a polynomial in
# (x / 3.75)**2 gives I0(x) (I1(x) / x); above, one in 3.75 / x gives
# sqrt(x) exp(-x) I0(x) (resp. I1). torch.distributions.VonMises uses the same tables, so the
# densities agree to rounding (the approximations themselves are good to about 1e-7).
_SMALL = (
    (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813),
    (0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411),
)
_LARGE = (
    (0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537,
     -0.01647633, 0.00392377),
    (0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312,
     0.01787654, -0.00420059),
)


def _horner(y: Tensor, coefficients: Sequence[float]) -> Tensor:
    """sum_i coefficients[i] * y**i."""
    result: Any = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        result = c + y * result
    return result


def _log_bessel_i(x: Tensor, order: int) -> Tensor:
    """log I_order(x) for x > 0, order 0 or 1, by the polynomial approximations above."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    small = _horner((x / 3.75) ** 2, _SMALL[order])
    if order == 1:
        small = x.abs() * small
    small = small.log()
    # the large-x branch on safe inputs where the small one is taken (its polynomial may turn
    # negative there)
    xl = rg.where(x < 3.75, 3.75, x)
    large = xl - 0.5 * xl.log() + _horner(3.75 / xl, _LARGE[order]).log()
    return rg.where(x < 3.75, small, large)


def _rejection_sample(loc: Tensor, concentration: Tensor, proposal_r: Tensor, shape: Size) -> Tensor:
    """Best and Fisher's (1979) wrapped-Cauchy rejection sampler, in loc's dtype (float64),
    then wrapped into [-pi, pi)."""
    x = rg.zeros(shape, dtype=loc.dtype, device=loc.device)
    done = rg.zeros(shape, dtype=rg.bool_, device=loc.device)
    while not bool(done.all()):
        u1, u2, u3 = rg.rand((3,) + tuple(shape), dtype=loc.dtype, device=loc.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        # the log test only where c > 0 (elsewhere it fails: log of a nonpositive ratio)
        positive = c > 0
        log_test = ((c / u2).clamp(min=rg.finfo(c.dtype).tiny).log() + 1 - c >= 0) & positive
        accept = ((c * (2 - c) - u2) > 0) | log_test
        x = rg.where(accept & ~done, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises (circular normal) distribution of an angle: density
    ``exp(concentration * cos(x - loc)) / (2 pi I0(concentration))``. loc and the values may be
    any reals (read modulo 2 pi); mean and variance are the circular ones.

    Sampling is not reparameterized (``has_rsample`` is False).

    Args:
        loc (Tensor): the mean angle, in radians.
        concentration (Tensor): kappa (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.VonMises(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([0.0]))
        tensor([-1.0738])
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Union[Tensor, float], concentration: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        """concentration cos(value - loc) - log(2 pi) - log I0(concentration).

        Args:
            value (Tensor): angles.
        """
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return log_prob - math.log(2 * math.pi) - _log_bessel_i(self.concentration, 0)

    @lazy_property
    def _loc(self) -> Tensor:
        return self.loc.to(rg.float64)

    @lazy_property
    def _concentration(self) -> Tensor:
        return self.concentration.to(rg.float64)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa**2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho**2) / (2 * rho)
        return rg.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Angles in [-pi, pi) by Best and Fisher's rejection sampler (run in float64, as torch's,
        so that small concentrations cannot stall it).

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        with rg.no_grad():
            x = _rejection_sample(self._loc.detach(), self._concentration.detach(), self._proposal_r.detach(), shape)
            return x.to(self.loc.dtype)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> VonMises:
        """A VonMises with its parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        validate_args = self.__dict__.get("_validate_args")
        loc = self.loc.expand(batch_shape)
        concentration = self.concentration.expand(batch_shape)
        return type(self)(loc, concentration, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """loc (the circular mean)."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:  # type: ignore[override]
        """1 - I1(concentration) / I0(concentration) (the circular variance)."""
        return 1 - (_log_bessel_i(self.concentration, 1) - _log_bessel_i(self.concentration, 0)).exp()
