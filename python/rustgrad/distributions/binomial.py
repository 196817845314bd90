"""Binomial: the number of successes in total_count Bernoulli trials."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import _sampling, constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial"]


def _clamp_by_zero(x: Tensor) -> Tensor:
    # max(x, 0) whose gradient at 0 is 1/2 (the mean of the two one-sided slopes)
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """The Binomial distribution: successes among ``total_count`` independent trials, each a
    success with probability ``probs`` (or log-odds ``logits``; give one of them).

    Args:
        total_count (int or Tensor): the number of trials (a nonnegative integer).
        probs (Tensor): the success probability.
        logits (Tensor): the log-odds of success.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Binomial(10, torch.tensor([0.5]))
        >>> m.log_prob(torch.tensor([5.0]))
        tensor([-1.4020])
    """

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Union[Tensor, int] = 1, probs: Optional[Tensor] = None,
                 logits: Optional[Tensor] = None, validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
        else:
            assert logits is not None
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Binomial:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Binomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        """The integers 0 .. total_count."""
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        """total_count * probs."""
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        """floor((total_count + 1) probs), at most total_count."""
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        """total_count * probs * (1 - probs)."""
        return self.total_count * self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The success probability."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The parameter's shape."""
        return self._param.size()

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Counts in the parameter's dtype.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        with rg.no_grad():
            return _sampling.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """log C(n, value) + value log p + (n - value) log(1 - p), from the logits.

        Args:
            value (Tensor): counts.
        """
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_choose = rg.lgamma(n + 1) - rg.lgamma(value + 1) - rg.lgamma(n - value + 1)
        # n log(1 + exp(logits)), stable for logits of either sign
        log_norm = n * _clamp_by_zero(self.logits) + n * (-self.logits.abs()).exp().log1p()
        return value * self.logits + log_choose - log_norm

    def entropy(self) -> Tensor:
        """-sum over the support of p log p (one total_count for the whole batch only)."""
        total_count = int(self.total_count.max())
        if not bool(self.total_count.min() == total_count):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The counts 0 .. total_count along a new leading dim (one total_count for the whole
        batch only).

        Args:
            expand (bool): expand over the batch shape (else the batch dims are 1).
        """
        total_count = int(self.total_count.max())
        if not bool(self.total_count.min() == total_count):
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = rg.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
