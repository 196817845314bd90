"""InverseGamma: the reciprocal of a Gamma variable."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Tensor
from .gamma import Gamma
from .transformed_distribution import TransformedDistribution
from .transforms import PowerTransform

__all__ = ["InverseGamma"]


class InverseGamma(TransformedDistribution):
    """The inverse gamma distribution: the law of 1 / X for X ~ Gamma(concentration, rate).

    Args:
        concentration (float or Tensor): the shape alpha (positive).
        rate (float or Tensor): the Gamma's rate beta (positive), the scale of 1 / X.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.InverseGamma(torch.tensor([3.0]), torch.tensor([4.0]))
        >>> m.mean
        tensor([2.])
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration: Union[Tensor, float], rate: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        base_dist = Gamma(concentration, rate, validate_args=validate_args)
        neg_one = -base_dist.rate.new_ones(())
        super().__init__(base_dist, PowerTransform(neg_one), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> InverseGamma:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(InverseGamma, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def concentration(self) -> Tensor:
        """alpha."""
        return self.base_dist.concentration

    @property
    def rate(self) -> Tensor:
        """beta."""
        return self.base_dist.rate

    @property
    def mean(self) -> Tensor:
        """rate / (concentration - 1), inf for concentration <= 1."""
        return rg.where(self.concentration > 1, self.rate / (self.concentration - 1), math.inf)

    @property
    def mode(self) -> Tensor:
        """rate / (concentration + 1)."""
        return self.rate / (self.concentration + 1)

    @property
    def variance(self) -> Tensor:
        """rate**2 / ((concentration - 1)**2 (concentration - 2)), inf for concentration <= 2."""
        c = self.concentration
        result = self.rate.square() / ((c - 1).square() * (c - 2))
        return rg.where(c > 2, result, math.inf)

    def entropy(self) -> Tensor:
        """alpha + log(beta) + lgamma(alpha) - (1 + alpha) digamma(alpha)."""
        c = self.concentration
        return c + self.rate.log() + c.lgamma() - (1 + c) * c.digamma()
