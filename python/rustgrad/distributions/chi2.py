"""Chi2: the chi-squared distribution, a Gamma(df / 2, 1 / 2)."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import constraints
from ._rg import Tensor
from .gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom: Gamma(df / 2, rate=1/2).
    As for Gamma, sampling is not reparameterized in rustgrad.

    Args:
        df (float or Tensor): the degrees of freedom (positive).
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Chi2(torch.tensor([2.0]))
        >>> m.mean
        tensor([2.])
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Chi2:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)  # type: ignore[return-value]

    @property
    def df(self) -> Tensor:
        """The degrees of freedom."""
        return self.concentration * 2
