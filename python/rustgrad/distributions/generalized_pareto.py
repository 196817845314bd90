"""GeneralizedPareto: the distribution of exceedances over a threshold."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution with ``loc``, ``scale`` and ``concentration`` xi:
    survival function ``(1 + xi z) ** (-1 / xi)`` of z = (x - loc) / scale (``exp(-z)`` for
    xi = 0). Exponential (loc = 0, xi = 0), Pareto (xi > 0, loc = scale / xi) and Uniform
    (xi = -1) are special cases. The support is [loc, inf) for xi >= 0 and
    [loc, loc - scale / xi] for xi < 0.

    Args:
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale (positive).
        concentration (float or Tensor): the shape xi.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.GeneralizedPareto(torch.tensor([0.0]), torch.tensor([2.0]),
        ...                                           torch.tensor([0.25]))
        >>> m.mean
        tensor([2.6667])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 concentration: Union[Tensor, float], validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalars = all(isinstance(v, Number) for v in (loc, scale, concentration))
        batch_shape = Size() if scalars else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> GeneralizedPareto:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        super(GeneralizedPareto, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """icdf of uniform draws: differentiable in every parameter.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _z(self, x: Tensor) -> Tensor:
        return (x - self.loc) / self.scale

    def _zero_and_safe(self) -> Any:
        # (where xi is (close to) 0, xi with those entries replaced by 1)
        xi = self.concentration
        eq_zero = xi.isclose(rg.zeros_like(xi))
        return eq_zero, rg.where(eq_zero, rg.ones_like(xi), xi)

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(scale) - (1 / xi + 1) log1p(xi z) (-log(scale) - z for xi = 0).

        Args:
            value (Tensor): points of the support.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        y = 1 / safe + rg.ones_like(z)
        nonzero = rg.where(y == 0, y, y * (safe * z).log1p())
        return -self.scale.log() - rg.where(eq_zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        """log P(X > value): -log1p(xi z) / xi (-z for xi = 0).

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        return rg.where(eq_zero, -z, -(safe * z).log1p() / safe)

    def log_cdf(self, value: Tensor) -> Tensor:
        """log P(X <= value), from the log survival function.

        Args:
            value (Tensor): the points.
        """
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        """P(X <= value).

        Args:
            value (Tensor): the points.
        """
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        """loc + scale / xi * expm1(-xi log1p(-value)) (loc - scale log1p(-value) for xi = 0).

        Args:
            value (Tensor): probabilities.
        """
        eq_zero, safe = self._zero_and_safe()
        logu = (-value).log1p()
        nonzero = self.loc + self.scale / safe * (-safe * logu).expm1()
        zero = self.loc - self.scale * logu
        return rg.where(eq_zero, zero, nonzero)

    @property
    def mean(self) -> Tensor:
        """loc + scale / (1 - xi), NaN for xi >= 1."""
        valid = self.concentration < 1
        safe = rg.where(valid, self.concentration, 0.5)
        return rg.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self) -> Tensor:
        """scale**2 / ((1 - xi)**2 (1 - 2 xi)), NaN for xi >= 1/2."""
        valid = self.concentration < 0.5
        safe = rg.where(valid, self.concentration, 0.25)
        return rg.where(valid, self.scale**2 / ((1 - safe) ** 2 * (1 - 2 * safe)), math.nan)

    def entropy(self) -> Tensor:
        """log(scale) + xi + 1."""
        return (self.scale.log() + self.concentration + 1).broadcast_to(self._batch_shape)

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """[loc, loc - scale / xi] for xi < 0, else [loc, inf)."""
        lower = self.loc
        negative = self.concentration < 0
        safe = rg.where(negative, self.concentration, -1.0)
        upper = rg.where(negative, lower - self.scale / safe, math.inf)
        return constraints.interval(lower, upper)
