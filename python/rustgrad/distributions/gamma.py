"""Gamma: the distribution of waiting times with shape (concentration) and rate."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import _special, constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """The Gamma distribution with shape ``concentration`` and inverse scale ``rate``.

    ``rsample`` is reparameterized: the samples' gradient in the concentration is the implicit
    one, -(dF/dconcentration) / density with F the cdf (as torch's), computed here to about
    1e-9 relative accuracy.

    Args:
        concentration (float or Tensor): the shape (positive).
        rate (float or Tensor): the rate, 1 / scale (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Gamma(torch.tensor([2.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-1.])
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        """concentration / rate."""
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        """(concentration - 1) / rate, at least 0."""
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        """concentration / rate ** 2."""
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration: Union[Tensor, float], rate: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Gamma:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Gamma, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Gamma(concentration, 1) draws (Marsaglia and Tsang's method) divided by rate, at least
        the dtype's tiny: differentiable in both parameters (implicitly in the concentration).

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        value = _special.standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # kept positive (log_prob's domain) without cutting the gradient
        tiny = rg.finfo(value.dtype).tiny
        return value + (value.detach().clamp(min=tiny) - value.detach())

    def log_prob(self, value: Tensor) -> Tensor:
        """c log(rate) + (c - 1) log(value) - rate value - lgamma(c), c the concentration.

        Args:
            value (Tensor): nonnegative points.
        """
        value = value if isinstance(value, Tensor) else rg.tensor(value, dtype=self.rate.dtype,
                                                                     device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return rg.xlogy(c, r) + rg.xlogy(c - 1, value) - r * value - rg.lgamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        """P(concentration, rate * value), the regularized lower incomplete gamma function
        (differentiable in value and rate; as torch's, not in concentration).

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return _special.gammainc(self.concentration, self.rate * value)

    def entropy(self) -> Tensor:
        """c - log(rate) + lgamma(c) + (1 - c) digamma(c), c the concentration."""
        c = self.concentration
        return c - self.rate.log() + rg.lgamma(c) + (1.0 - c) * rg.digamma(c)

    @property
    def _natural_params(self) -> Tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return rg.lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()
