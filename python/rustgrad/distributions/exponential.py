"""Exponential: the memoryless waiting time."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """The exponential distribution, density ``rate * exp(-rate * x)`` on x >= 0.

    Args:
        rate (float or Tensor): the rate, 1 / scale (positive).
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Exponential(torch.tensor([2.0]))
        >>> m.mean
        tensor([0.5000])
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        """0."""
        return rg.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        """1 / rate."""
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        """1 / rate ** 2."""
        return self.rate.pow(-2)

    def __init__(self, rate: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Exponential:
        """The rate expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Exponential, _instance)
        batch_shape = Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Exponential, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """E / rate with E ~ Exp(1): differentiable in rate.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.rate.dtype, device=self.rate.device)
        # -log(1 - U) for U in [0, 1) is Exp(1) and finite; the gradient flows through rate only
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        """log(rate) - rate value.

        Args:
            value (Tensor): nonnegative points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        """1 - exp(-rate value).

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """-log(1 - value) / rate.

        Args:
            value (Tensor): probabilities.
        """
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        """1 - log(rate)."""
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> Tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return -(-x).log()
