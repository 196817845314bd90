"""LogNormal: exp of a Normal."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import constraints
from ._rg import Tensor
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform

__all__ = ["LogNormal"]


class LogNormal(TransformedDistribution):
    """The distribution of exp(X) for X ~ Normal(loc, scale).

    Args:
        loc (float or Tensor): the mean of log(X).
        scale (float or Tensor): the standard deviation of log(X) (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.LogNormal(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-0.9189])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> LogNormal:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def loc(self) -> Tensor:
        """The mean of log(X)."""
        return self.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The standard deviation of log(X)."""
        return self.base_dist.scale

    @property
    def mean(self) -> Tensor:
        """exp(loc + scale**2 / 2)."""
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self) -> Tensor:
        """exp(loc - scale**2)."""
        return (self.loc - self.scale.square()).exp()

    @property
    def variance(self) -> Tensor:
        """(exp(scale**2) - 1) exp(2 loc + scale**2)."""
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self) -> Tensor:
        """The Normal's entropy plus loc."""
        return self.base_dist.entropy() + self.loc
