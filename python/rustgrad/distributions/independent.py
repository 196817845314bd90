"""Independent: reinterprets batch dims of a distribution as event dims."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import _sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    """A distribution whose rightmost ``reinterpreted_batch_ndims`` batch dims become event
    dims: log_prob and entropy sum over them. Turns a batch of independent Normals into one
    diagonal multivariate Normal, for example.

    Args:
        base_distribution (Distribution): the distribution.
        reinterpreted_batch_ndims (int): how many batch dims to reinterpret.
        validate_args (bool, optional): check values given to log_prob.

    Example::

        >>> from rustgrad.distributions import Independent, Normal
        >>> d = Independent(Normal(torch.zeros(3, 2), torch.ones(3, 2)), 1)
        >>> d.batch_shape, d.event_shape
        (torch.Size([3]), torch.Size([2]))
    """

    arg_constraints: Dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: Optional[bool] = None) -> None:
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError("Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                             f"actual {reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        cut = len(shape) - event_dim
        self.base_dist: Any = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Independent:
        """The base distribution expanded (its reinterpreted dims kept).

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Independent, _instance)
        batch_shape = Size(batch_shape)
        base_batch = tuple(batch_shape) + tuple(self.event_shape[:self.reinterpreted_batch_ndims])
        new.base_dist = self.base_dist.expand(base_batch)
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        super(Independent, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """The base distribution's."""
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        """The base distribution's, when no dim is reinterpreted."""
        if self.reinterpreted_batch_ndims > 0:
            return False
        return self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> Any:
        """The base support with the reinterpreted dims."""
        result = self.base_dist.support
        if self.reinterpreted_batch_ndims:
            result = constraints.independent(result, self.reinterpreted_batch_ndims)
        return result

    @property
    def mean(self) -> Tensor:
        """The base distribution's."""
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        """The base distribution's."""
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        """The base distribution's."""
        return self.base_dist.variance

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """The base distribution's samples.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """The base distribution's reparameterized samples.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        """The base log_prob summed over the reinterpreted dims.

        Args:
            value (Tensor): the points.
        """
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        """The base entropy summed over the reinterpreted dims."""
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The base distribution's (only when no dim is reinterpreted).

        Args:
            expand (bool): expand over the batch shape.
        """
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
