"""Laplace: the double-exponential distribution."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace distribution, density ``exp(-|x - loc| / scale) / (2 scale)``.

    Args:
        loc (float or Tensor): the location (mean and median).
        scale (float or Tensor): the scale (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Laplace(torch.tensor([0.0]), torch.tensor([1.0]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-1.6931])
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """2 scale ** 2."""
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        """sqrt(2) scale."""
        return 2**0.5 * self.scale

    def __init__(self, loc: Union[Tensor, float], scale: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        if isinstance(loc, Number) and isinstance(scale, Number):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Laplace:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Laplace, _instance)
        batch_shape = Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        super(Laplace, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc - scale sign(u) log(1 - |u|), u ~ U(eps - 1, 1): differentiable in loc and scale.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        finfo = rg.finfo(self.loc.dtype)
        # u in (-1, 1) keeps log1p(-|u|) finite
        u = rg.rand(shape, dtype=self.loc.dtype, device=self.loc.device) * (2 - finfo.eps) + (finfo.eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        """-log(2 scale) - |value - loc| / scale.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        """1/2 - sign(value - loc) (exp(-|value - loc| / scale) - 1) / 2.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        """loc - scale sign(value - 1/2) log(1 - 2 |value - 1/2|).

        Args:
            value (Tensor): probabilities.
        """
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        """1 + log(2 scale)."""
        return 1 + (2 * self.scale).log()
