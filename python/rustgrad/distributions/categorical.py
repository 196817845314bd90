"""Categorical: a distribution over the indices 0 .. K-1."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_tensors, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class Categorical(Distribution):
    """A distribution over the indices ``0 .. K-1`` of the last dim of ``probs`` or ``logits``.

    ``probs`` need only be nonnegative with a positive sum (they are normalized along the last
    dim); ``logits`` are unnormalized log-probabilities (normalized by logsumexp). Give exactly
    one of them.

    Args:
        probs (Tensor): event probabilities, ``(*batch, K)``.
        logits (Tensor): event log-probabilities, ``(*batch, K)``.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Categorical(torch.tensor([0.25, 0.25, 0.5]))
        >>> m.log_prob(torch.tensor(2))
        tensor(-0.6931)
        >>> m.sample((4,)).shape
        torch.Size([4])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            assert logits is not None
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            # normalized: logits - logsumexp(logits) are log-probabilities
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Categorical:
        """The parameters expanded to batch_shape (+ the events dim).

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        super(Categorical, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """The integers 0 .. K-1."""
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self) -> Tensor:
        """Normalized log-probabilities (from probs, clamped away from 0)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        """Normalized probabilities (softmax of the logits)."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter: batch_shape + (K,)."""
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        """NaN (the indices are labels, without a mean)."""
        return rg.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    @property
    def mode(self) -> Tensor:
        """The most probable index."""
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        """NaN (the indices are labels, without a variance)."""
        return rg.full(self._extended_shape(), math.nan, dtype=self.probs.dtype, device=self.probs.device)

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Indices (int64) of shape sample_shape + batch_shape.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        sample_shape = Size(sample_shape)
        with rg.no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            drawn = rows.multinomial(max(sample_shape.numel(), 1), True).T
            if sample_shape.numel() == 0:
                drawn = drawn[:0]
            return drawn.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """log probs[value], broadcast over the batch.

        Args:
            value (Tensor): indices.
        """
        if self._validate_args:
            self._validate_sample(value)
        index = value.long().unsqueeze(-1)
        index, log_pmf = broadcast_tensors(index, self.logits)
        return log_pmf.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        """-sum(probs * log probs) (a zero probability contributes 0)."""
        min_real = rg.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The indices 0 .. K-1 along a new leading dim.

        Args:
            expand (bool): expand over the batch shape (else the batch dims are 1).
        """
        values = rg.arange(self._num_events, dtype=rg.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
