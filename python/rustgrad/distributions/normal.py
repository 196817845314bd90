"""Normal: the Gaussian distribution of one variable."""

from __future__ import annotations

import math
from numbers import Number, Real
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import _standard_normal, broadcast_all

__all__ = ["Normal"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(ExponentialFamily):
    """The normal (Gaussian) distribution N(loc, scale**2).

    Args:
        loc (float or Tensor): the mean.
        scale (float or Tensor): the standard deviation (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Normal(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([0.0]))
        tensor([-0.9189])
        >>> m.sample((3,)).shape
        torch.Size([3, 1])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """scale."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """scale ** 2."""
        return self.stddev.pow(2)

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Normal:
        """This distribution with loc and scale expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Normal, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Normal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Samples outside autograd.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        with rg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc + scale * eps with eps ~ N(0, 1): differentiable in loc and scale.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        """-(value - loc)**2 / (2 scale**2) - log(scale) - log(sqrt(2 pi)).

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale**2
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - _HALF_LOG_2PI

    def cdf(self, value: Tensor) -> Tensor:
        """(1 + erf((value - loc) / (scale sqrt 2))) / 2.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale sqrt(2) erfinv(2 value - 1).

        Args:
            value (Tensor): probabilities.
        """
        return self.loc + self.scale * rg.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        """1/2 + log(sqrt(2 pi) scale)."""
        return 0.5 + _HALF_LOG_2PI + self.scale.log()

    @property
    def _natural_params(self) -> Tuple[Tensor, Tensor]:
        return (self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal())

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
