"""TransformedDistribution: a base distribution pushed through transforms."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform, _parts
from .utils import _sum_rightmost

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``transforms[-1](...transforms[0](x))`` for x drawn from a base
    distribution. log_prob follows by the change of variables: the base log_prob at the
    inverted value minus the transforms' log_abs_det_jacobian.

    The event shape is the largest the transforms need: a base of smaller event shape is
    reinterpreted (as by Independent), and one the transforms would broadcast is expanded.

    Args:
        base_distribution (Distribution): the distribution of x.
        transforms (Transform or list of Transform): applied in order.
        validate_args (bool, optional): check values given to log_prob.

    Example::

        >>> from rustgrad.distributions import Normal, TransformedDistribution
        >>> from rustgrad.distributions.transforms import ExpTransform
        >>> d = TransformedDistribution(Normal(0.0, 1.0), [ExpTransform()])  # a LogNormal
        >>> d.log_prob(torch.tensor(1.0))
        tensor(-0.9189)
    """

    arg_constraints: Dict[str, constraints.Constraint] = {}

    def __init__(self, base_distribution: Distribution, transforms: Union[Transform, List[Transform]],
                 validate_args: Optional[bool] = None) -> None:
        self.transforms = _parts(transforms)
        base_shape = Size(tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape))
        base_event_dim = len(base_distribution.event_shape)
        transform = ComposeTransform(self.transforms)
        if len(base_shape) < transform.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{transform.domain.event_dim}, but got {base_shape}.")
        forward_shape = transform.forward_shape(base_shape)
        expanded_base_shape = transform.inverse_shape(forward_shape)
        if base_shape != expanded_base_shape:
            # the transforms broadcast the base (an AffineTransform with a larger loc)
            base_batch = expanded_base_shape[:len(expanded_base_shape) - base_event_dim]
            base_distribution = base_distribution.expand(base_batch)
        reinterpreted = transform.domain.event_dim - base_event_dim
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        # Any: the subclasses read their base's own parameters (loc, scale, ...)
        self.base_dist: Any = base_distribution
        # the event dims the result needs: the codomain's, or the base's shifted by the change
        change = transform.codomain.event_dim - transform.domain.event_dim
        event_dim = max(transform.codomain.event_dim, base_event_dim + change)
        assert len(forward_shape) >= event_dim
        cut = len(forward_shape) - event_dim
        super().__init__(forward_shape[:cut], forward_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> TransformedDistribution:
        """The base distribution expanded so that the result has this batch shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(TransformedDistribution, _instance)
        batch_shape = Size(batch_shape)
        shape = Size(tuple(batch_shape) + tuple(self.event_shape))
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        base_batch = shape[:len(shape) - len(self.base_dist.event_shape)]
        new.base_dist = self.base_dist.expand(base_batch)
        new.transforms = self.transforms
        super(TransformedDistribution, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> Any:
        """The last transform's codomain (with the event dims of the result)."""
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """The base distribution's."""
        return self.base_dist.has_rsample

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """A base sample pushed through the transforms, outside autograd.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        with rg.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """A reparameterized base sample pushed through the transforms.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        """The base log_prob of the inverted value minus every transform's log_abs_det_jacobian.

        Args:
            value (Tensor): points of the support.
        """
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob: Any = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """value, or 1 - value when the transforms reverse the order."""
        sign: Any = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        """The base cdf of the inverted value (for monotone transforms of one variable).

        Args:
            value (Tensor): the points.
        """
        for t in self.transforms[::-1]:
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        value = self.base_dist.cdf(value)
        return self._monotonize_cdf(value)

    def icdf(self, value: Tensor) -> Tensor:
        """The base icdf pushed through the transforms (for monotone transforms of one variable).

        Args:
            value (Tensor): probabilities.
        """
        value = self._monotonize_cdf(value)
        value = self.base_dist.icdf(value)
        for t in self.transforms:
            value = t(value)
        return value
