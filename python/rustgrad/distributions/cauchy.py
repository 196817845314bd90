"""Cauchy: the ratio of two independent standard normals (shifted and scaled)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy"]


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution, density ``1 / (pi scale (1 + ((x - loc) / scale)**2))``.
    It has no mean or variance (NaN and inf).

    Args:
        loc (float or Tensor): the median.
        scale (float or Tensor): the half width at half maximum (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Cauchy(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.cdf(torch.tensor([1.0]))
        tensor([0.7500])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Cauchy:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Cauchy, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Cauchy, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """NaN: the Cauchy distribution has no mean."""
        return rg.full(self._extended_shape(), math.nan, dtype=self.loc.dtype, device=self.loc.device)

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """inf: the Cauchy distribution has no finite variance."""
        return rg.full(self._extended_shape(), math.inf, dtype=self.loc.dtype, device=self.loc.device)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc + scale tan(pi (U - 1/2)): differentiable in loc and scale.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        eps = (math.pi * (u - 0.5)).tan()
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(pi) - log(scale) - log(1 + ((value - loc) / scale)**2).

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        """atan((value - loc) / scale) / pi + 1/2.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale tan(pi (value - 1/2)).

        Args:
            value (Tensor): probabilities.
        """
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        """log(4 pi scale)."""
        return math.log(4 * math.pi) + self.scale.log()
