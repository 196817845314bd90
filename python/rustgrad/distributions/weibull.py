"""Weibull: a power of an exponential variable, scaled."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .utils import broadcast_all, euler_constant

__all__ = ["Weibull"]


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: the law of ``scale * E ** (1 / concentration)``
    for E ~ Exponential(1); survival function ``exp(-(x / scale) ** concentration)``.

    ``rsample`` is reparameterized (through the exponential draws).

    Args:
        scale (float or Tensor): lambda (positive).
        concentration (float or Tensor): the shape k (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Weibull(torch.tensor([2.0]), torch.tensor([1.0]))
        >>> m.mean
        tensor([2.])
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: Union[Tensor, float], concentration: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(rg.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Weibull:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Weibull, _instance)
        batch_shape = Size(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        base_dist = self.base_dist.expand(batch_shape)
        transforms = [PowerTransform(exponent=new.concentration_reciprocal),
                      AffineTransform(loc=0, scale=new.scale)]
        super(Weibull, new).__init__(base_dist, transforms, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """scale * Gamma(1 + 1 / k)."""
        return self.scale * rg.lgamma(1 + self.concentration_reciprocal).exp()

    @property
    def mode(self) -> Tensor:
        """scale * ((k - 1) / k) ** (1 / k)."""
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        """scale**2 (Gamma(1 + 2 / k) - Gamma(1 + 1 / k)**2)."""
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (rg.lgamma(1 + 2 * r).exp() - (2 * rg.lgamma(1 + r)).exp())

    def entropy(self) -> Tensor:
        """Euler's constant (1 - 1 / k) + log(scale / k) + 1."""
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + (self.scale * r).log() + 1
