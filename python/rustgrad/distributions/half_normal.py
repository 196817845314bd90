"""HalfNormal: |X| for a centered Normal X."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Tensor
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfNormal"]


class HalfNormal(TransformedDistribution):
    """The distribution of |X| for X ~ Normal(0, scale).

    Args:
        scale (float or Tensor): the scale of the Normal (positive).
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.HalfNormal(torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([0.0]))
        tensor([-0.2258])
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        base = Normal(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> HalfNormal:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(HalfNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def scale(self) -> Tensor:
        """The Normal's scale."""
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        """scale sqrt(2 / pi)."""
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self) -> Tensor:
        """0."""
        return rg.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        """scale**2 (1 - 2 / pi)."""
        return self.scale.pow(2) * (1 - 2 / math.pi)

    def log_prob(self, value: Tensor) -> Tensor:
        """The Normal's log_prob plus log 2 for value >= 0, -inf below.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return rg.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        """2 Phi(value / scale) - 1.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        """The Normal's icdf at (prob + 1) / 2.

        Args:
            prob (Tensor): probabilities.
        """
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        """The Normal's entropy minus log 2."""
        return self.base_dist.entropy() - math.log(2)
