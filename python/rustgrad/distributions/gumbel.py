"""Gumbel: the distribution of maxima (type-I extreme value)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Tensor
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Gumbel"]


class Gumbel(TransformedDistribution):
    """The Gumbel distribution, CDF ``exp(-exp(-(x - loc) / scale))``: built as
    ``loc - scale * log(-log(U))`` for U uniform on (0, 1), so rsample is reparameterized.

    Args:
        loc (float or Tensor): the location (the mode).
        scale (float or Tensor): the scale (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Gumbel(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([0.0]))
        tensor([-1.])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = rg.finfo(self.loc.dtype)
        # U on (tiny, 1 - eps): both logs stay finite
        base = Uniform(rg.full_like(self.loc, finfo.tiny), rg.full_like(self.loc, 1 - finfo.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-rg.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Gumbel:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    def log_prob(self, value: Tensor) -> Tensor:
        """z - exp(z) - log(scale), z = (loc - value) / scale.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    @property
    def mean(self) -> Tensor:
        """loc + scale * (Euler's constant)."""
        return self.loc + self.scale * euler_constant

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """pi scale / sqrt(6)."""
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self) -> Tensor:
        """(pi scale)**2 / 6."""
        return self.stddev.pow(2)

    def entropy(self) -> Tensor:
        """log(scale) + 1 + Euler's constant."""
        return self.scale.log() + (1 + euler_constant)
