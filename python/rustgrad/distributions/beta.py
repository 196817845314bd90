"""Beta: a distribution on the unit interval."""

from __future__ import annotations

from numbers import Real
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """The Beta distribution on [0, 1], density proportional to
    ``x ** (concentration1 - 1) * (1 - x) ** (concentration0 - 1)``: a two-event Dirichlet.

    Sampling is not reparameterized in rustgrad (``has_rsample`` is False; see Gamma).

    Args:
        concentration1 (float or Tensor): alpha (positive).
        concentration0 (float or Tensor): beta (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Beta(torch.tensor([2.0]), torch.tensor([2.0]))
        >>> m.mean
        tensor([0.5000])
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Union[Tensor, float], concentration0: Union[Tensor, float],
                 validate_args: Optional[bool] = None) -> None:
        if isinstance(concentration1, Real) and isinstance(concentration0, Real):
            both = rg.tensor([float(concentration1), float(concentration0)])
        else:
            c1, c0 = broadcast_all(concentration1, concentration0)
            both = rg.stack([c1, c0], -1)
        self._dirichlet = Dirichlet(both, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Beta:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        super(Beta, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """c1 / (c1 + c0)."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        """The Dirichlet's mode, first entry."""
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        """c1 c0 / ((c1 + c0) ** 2 (c1 + c0 + 1))."""
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """The first entry of a two-event Dirichlet's rsample: differentiable in both parameters.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        """The Dirichlet's log_prob at (value, 1 - value).

        Args:
            value (Tensor): points of [0, 1].
        """
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(rg.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        """The Dirichlet's entropy."""
        return self._dirichlet.entropy()

    @property
    def concentration1(self) -> Tensor:
        """alpha."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        """beta."""
        return self._dirichlet.concentration[..., 1]

    @property
    def _natural_params(self) -> Tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        return rg.lgamma(x) + rg.lgamma(y) - rg.lgamma(x + y)
