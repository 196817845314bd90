"""Poisson: counts of events at a constant rate."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import _sampling, constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """The Poisson distribution with mean ``rate``: P(k) = rate**k exp(-rate) / k!.

    Args:
        rate (float or Tensor): the rate (nonnegative).
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Poisson(torch.tensor([4.0]))
        >>> m.log_prob(torch.tensor([2.0]))
        tensor([-1.9206])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self) -> Tensor:
        """rate."""
        return self.rate

    @property
    def mode(self) -> Tensor:
        """floor(rate)."""
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        """rate."""
        return self.rate

    def __init__(self, rate: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Poisson:
        """The rate expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Poisson, _instance)
        batch_shape = Size(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        super(Poisson, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Counts in the rate's dtype.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        with rg.no_grad():
            return _sampling.poisson(self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """value log(rate) - rate - lgamma(value + 1).

        Args:
            value (Tensor): counts.
        """
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return rg.xlogy(value, rate) - rate - rg.lgamma(value + 1)

    @property
    def _natural_params(self) -> Tuple[Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.exp()
