"""Kumaraswamy: a Beta-like distribution on [0, 1] with a closed-form cdf."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Tensor
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moment(a: Tensor, b: Tensor, n: int) -> Tensor:
    """E[X**n] = b B(1 + n / a, b), by lgamma."""
    shifted = 1 + n / a
    return b * (rg.lgamma(shifted) + rg.lgamma(b) - rg.lgamma(shifted + b)).exp()


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1]: density ``a b x**(a - 1) (1 - x**a)**(b - 1)``
    with a = ``concentration1`` and b = ``concentration0``; a uniform variable pushed through
    u -> (1 - u ** (1 / b)) ** (1 / a).

    Args:
        concentration1 (float or Tensor): a (positive).
        concentration0 (float or Tensor): b (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Kumaraswamy(torch.tensor([2.0]), torch.tensor([1.0]))
        >>> m.mean
        tensor([0.6667])
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Union[Tensor, float], concentration0: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(rg.full_like(self.concentration0, 0), rg.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()),
                      AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Kumaraswamy:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        """b B(1 + 1 / a, b)."""
        return _moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self) -> Tensor:
        """((a - 1) / (a b - 1)) ** (1 / a), NaN where a < 1 or b < 1."""
        a, b = self.concentration1, self.concentration0
        log_mode = b.reciprocal() * (-b).log1p() - (-b * a).log1p()
        log_mode = rg.where((b < 1) | (a < 1), math.nan, log_mode)
        return log_mode.exp()

    @property
    def variance(self) -> Tensor:
        """E[X**2] - mean**2."""
        return _moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self) -> Tensor:
        """(1 - 1/b) + (1 - 1/a) H_b - log(a) - log(b), H_b = digamma(b + 1) + Euler's constant."""
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = (self.concentration0 + 1).digamma() + euler_constant
        return t0 + t1 * harmonic - self.concentration1.log() - self.concentration0.log()
