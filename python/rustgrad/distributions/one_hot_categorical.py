"""OneHotCategorical: a Categorical whose values are one-hot vectors."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_hot(index: Tensor, n: int, like: Tensor) -> Tensor:
    """index as one-hot vectors of length n, in like's dtype."""
    return (index.unsqueeze(-1) == rg.arange(n, device=index.device)).to(like.dtype)


class OneHotCategorical(Distribution):
    """A Categorical over K events whose samples are one-hot vectors of length K (event shape
    ``(K,)``).

    Args:
        probs (Tensor): event probabilities, ``(*batch, K)``.
        logits (Tensor): event log-probabilities, ``(*batch, K)``.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.OneHotCategorical(torch.tensor([0.25, 0.75]))
        >>> m.log_prob(torch.tensor([0.0, 1.0]))
        tensor(-0.2877)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        self._categorical = Categorical(probs, logits)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> OneHotCategorical:
        """The categorical expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = Size(batch_shape)
        new._categorical = self._categorical.expand(batch_shape)
        super(OneHotCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        """The event probabilities."""
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        """The normalized event log-probabilities."""
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        """probs."""
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most probable event."""
        probs = self._categorical.probs
        return _one_hot(probs.argmax(-1), probs.shape[-1], probs)

    @property
    def variance(self) -> Tensor:
        """probs * (1 - probs)."""
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter: batch_shape + (K,)."""
        return self._categorical.param_shape

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """One-hot samples (in the parameter's dtype) of shape sample_shape + batch_shape + (K,).

        Args:
            sample_shape (Size): the leading sample dims.
        """
        sample_shape = Size(sample_shape)
        probs = self._categorical.probs
        index = self._categorical.sample(sample_shape)
        return _one_hot(index, self._categorical._num_events, probs)

    def log_prob(self, value: Tensor) -> Tensor:
        """log probs of the event each one-hot vector selects.

        Args:
            value (Tensor): one-hot vectors.
        """
        if self._validate_args:
            self._validate_sample(value)
        index = value.max(-1)[1]
        return self._categorical.log_prob(index)

    def entropy(self) -> Tensor:
        """The categorical's entropy."""
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The K one-hot vectors along a new leading dim.

        Args:
            expand (bool): expand over the batch shape (else the batch dims are 1).
        """
        n = self.event_shape[0]
        values = rg.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A OneHotCategorical whose rsample passes gradients straight through: the sample's values
    are one-hot, its gradient that of probs (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """A one-hot sample plus probs - probs.detach() (zero in value, probs' gradient).

        Args:
            sample_shape (Size): the leading sample dims.
        """
        samples = self.sample(sample_shape)
        probs = self._categorical.probs  # cached: probs' gradient reaches the parameters
        return samples + (probs - probs.detach())
