"""HalfCauchy: |X| for a centered Cauchy X."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Tensor
from .cauchy import Cauchy
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform

__all__ = ["HalfCauchy"]


class HalfCauchy(TransformedDistribution):
    """The distribution of |X| for X ~ Cauchy(0, scale).

    Args:
        scale (float or Tensor): the scale of the Cauchy (positive).
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.HalfCauchy(torch.tensor([1.0]))
        >>> m.cdf(torch.tensor([1.0]))
        tensor([0.5000])
    """

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        base = Cauchy(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> HalfCauchy:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def scale(self) -> Tensor:
        """The Cauchy's scale."""
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        """inf."""
        return rg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def mode(self) -> Tensor:
        """0."""
        return rg.zeros_like(self.scale)

    @property
    def variance(self) -> Tensor:
        """The Cauchy's (inf)."""
        return self.base_dist.variance

    def log_prob(self, value: Tensor) -> Tensor:
        """The Cauchy's log_prob plus log 2 for value >= 0, -inf below.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        value = value if isinstance(value, Tensor) else rg.tensor(value, dtype=self.scale.dtype,
                                                                     device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return rg.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        """2 F(value) - 1, F the Cauchy's cdf.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        """The Cauchy's icdf at (prob + 1) / 2.

        Args:
            prob (Tensor): probabilities.
        """
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        """The Cauchy's entropy minus log 2."""
        return self.base_dist.entropy() - math.log(2)
