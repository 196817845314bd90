"""Uniform: the uniform distribution on [low, high)."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Dict, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on the half-open interval [low, high).

    Args:
        low (float or Tensor): the lower bound (inclusive).
        high (float or Tensor): the upper bound (exclusive), above low.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Uniform(torch.tensor([0.0]), torch.tensor([4.0]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-1.3863])
        >>> m.cdf(torch.tensor([1.0]))
        tensor([0.2500])
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> Dict[str, constraints.Constraint]:  # type: ignore[override]
        """low < high, each bounded by the other."""
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @property
    def mean(self) -> Tensor:
        """(low + high) / 2."""
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        """NaN (every point of the interval is a mode)."""
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        """(high - low) / sqrt(12)."""
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        """(high - low) ** 2 / 12."""
        return (self.high - self.low).pow(2) / 12

    def __init__(self, low: Union[Tensor, float], high: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        if isinstance(low, Number) and isinstance(high, Number):
            batch_shape = Size()
        else:
            batch_shape = self.low.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Uniform:
        """The bounds expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        super(Uniform, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """[low, high]."""
        return constraints.interval(self.low, self.high)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """low + U (high - low) with U ~ U[0, 1): differentiable in low and high.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(high - low) inside [low, high), -inf outside.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).type_as(self.low) * (self.high > value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        """(value - low) / (high - low), clamped to [0, 1].

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        """low + value (high - low).

        Args:
            value (Tensor): probabilities.
        """
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        """log(high - low)."""
        return (self.high - self.low).log()
