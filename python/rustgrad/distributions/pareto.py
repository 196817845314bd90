"""Pareto: a power law on [scale, inf)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import constraints
from ._rg import Tensor
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto"]


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution, density ``alpha scale**alpha / x**(alpha + 1)`` on
    x >= scale: ``scale * exp(E)`` for E ~ Exponential(alpha).

    Args:
        scale (float or Tensor): the minimum value (positive).
        alpha (float or Tensor): the shape, the tail index (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Pareto(torch.tensor([1.0]), torch.tensor([3.0]))
        >>> m.mean
        tensor([1.5000])
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: Union[Tensor, float], alpha: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Pareto:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(batch_shape)
        new.alpha = self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def mean(self) -> Tensor:
        """alpha scale / (alpha - 1), inf for alpha <= 1."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self) -> Tensor:
        """scale."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """scale**2 alpha / ((alpha - 1)**2 (alpha - 2)), inf for alpha <= 2."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """[scale, inf)."""
        return constraints.greater_than_eq(self.scale)

    def entropy(self) -> Tensor:
        """log(scale / alpha) + 1 / alpha + 1."""
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())
