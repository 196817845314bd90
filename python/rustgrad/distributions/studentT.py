"""StudentT: Student's t-distribution."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    ``rsample`` is differentiable in every parameter (in df through the Chi2 draw's implicit
    gradient, see Gamma).

    Args:
        df (float or Tensor): the degrees of freedom (positive).
        loc (float or Tensor): the location. Default: 0.
        scale (float or Tensor): the scale (positive). Default: 1.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.StudentT(torch.tensor([2.0]))
        >>> m.log_prob(torch.tensor([0.0]))
        tensor([-1.0397])
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        """loc, NaN where df <= 1."""
        return rg.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """scale**2 df / (df - 2) for df > 2, inf for 1 < df <= 2, NaN for df <= 1."""
        df = self.df
        finite = self.scale.pow(2) * df / rg.where(df > 2, df - 2, 1.0)
        out = rg.where(df > 2, finite, math.inf)
        return rg.where(df <= 1, math.nan, out)

    def __init__(self, df: Union[Tensor, float], loc: Union[Tensor, float] = 0.0,
                 scale: Union[Tensor, float] = 1.0, validate_args: Optional[bool] = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> StudentT:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        super(StudentT, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc + scale X / sqrt(Z / df), X ~ N(0, 1), Z ~ Chi2(df): differentiable in every
        parameter.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * (z / self.df).rsqrt()
        return self.loc + self.scale * y

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density (1 + y**2 / df) ** (-(df + 1) / 2) / normalizer, y = (value - loc) / scale.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        df = self.df
        log_norm = (self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi)
                    + rg.lgamma(0.5 * df) - rg.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * (y**2 / df).log1p() - log_norm

    def entropy(self) -> Tensor:
        """The entropy, from the digamma and log-Beta functions of df."""
        df = self.df
        lbeta = rg.lgamma(0.5 * df) + math.lgamma(0.5) - rg.lgamma(0.5 * (df + 1))
        return (self.scale.log() + 0.5 * (df + 1) * (rg.digamma(0.5 * (df + 1)) - rg.digamma(0.5 * df))
                + 0.5 * df.log() + lbeta)

