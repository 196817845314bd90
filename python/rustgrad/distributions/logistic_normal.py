"""LogisticNormal: a Normal vector pushed onto the simplex by stick breaking."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import constraints
from ._rg import Tensor
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: a Normal(loc, scale) vector of K - 1
    entries through the StickBreakingTransform, so that
    ``log(X / (1 - X.cumsum(-1)))[..., :-1]`` (the stick breaks' log-odds) is Normal.

    Args:
        loc (float or Tensor): the base Normal's mean (its last dim the event).
        scale (float or Tensor): the base Normal's standard deviation (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.LogisticNormal(torch.zeros(2), torch.ones(2))
        >>> m.log_prob(torch.tensor([0.2, 0.3, 0.5]))
        tensor(1.2980)
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> LogisticNormal:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def loc(self) -> Tensor:
        """The base Normal's mean."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self) -> Tensor:
        """The base Normal's standard deviation."""
        return self.base_dist.base_dist.scale
