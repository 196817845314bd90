"""FisherSnedecor: the F distribution, the ratio of two scaled chi-squared variables."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all

__all__ = ["FisherSnedecor"]


class FisherSnedecor(Distribution):
    """The Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom: the law
    of (X1 / df1) / (X2 / df2) for independent chi-squared X1, X2 of those degrees.

    ``rsample`` is reparameterized through two Gamma draws (see Gamma).

    Args:
        df1 (float or Tensor): the numerator's degrees of freedom (positive).
        df2 (float or Tensor): the denominator's degrees of freedom (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.FisherSnedecor(torch.tensor([4.0]), torch.tensor([6.0]))
        >>> m.mean
        tensor([1.5000])
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Union[Tensor, float], df2: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        batch_shape = Size() if isinstance(df1, Number) and isinstance(df2, Number) else self.df1.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> FisherSnedecor:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        super(FisherSnedecor, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """df2 / (df2 - 2), NaN for df2 <= 2."""
        df2 = rg.where(self.df2 <= 2, math.nan, self.df2)
        return df2 / (df2 - 2)

    @property
    def mode(self) -> Tensor:
        """(df1 - 2) / df1 * df2 / (df2 + 2), NaN for df1 <= 2."""
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return rg.where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        """2 df2**2 (df1 + df2 - 2) / (df1 (df2 - 2)**2 (df2 - 4)), NaN for df2 <= 4."""
        df2 = rg.where(self.df2 <= 4, math.nan, self.df2)
        return 2 * df2.pow(2) * (self.df1 + df2 - 2) / (self.df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """X1 / X2 for X1 ~ Gamma(df1 / 2, df1), X2 ~ Gamma(df2 / 2, df2), at least the dtype's
        tiny: differentiable in both parameters.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        x1 = self._gamma1.rsample(sample_shape).view(shape)
        x2 = self._gamma2.rsample(sample_shape).view(shape)
        tiny = rg.finfo(x2.dtype).tiny
        # clamped as torch's in-place clamp: the gradient passes where the value is kept
        x2 = x2.clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        """The F density's log at value.

        Args:
            value (Tensor): positive points.
        """
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
