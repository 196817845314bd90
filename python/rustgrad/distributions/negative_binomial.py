"""NegativeBinomial: successes before total_count failures in Bernoulli trials."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import _sampling, constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .gamma import Gamma
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["NegativeBinomial"]


class NegativeBinomial(Distribution):
    """The negative binomial distribution: the number of successes in independent Bernoulli
    trials (success probability ``probs``, or log-odds ``logits``; give one of them) before
    ``total_count`` failures. total_count may be any nonnegative real (a Gamma-Poisson mixture).

    Args:
        total_count (float or Tensor): the number of failures (nonnegative).
        probs (Tensor): the success probability, in [0, 1).
        logits (Tensor): the log-odds of success.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.NegativeBinomial(3.0, torch.tensor([0.5]))
        >>> m.mean
        tensor([3.])
    """

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Union[Tensor, float], probs: Optional[Tensor] = None,
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

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> NegativeBinomial:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(NegativeBinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count.expand(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(NegativeBinomial, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    @property
    def mean(self) -> Tensor:
        """total_count * probs / (1 - probs)."""
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        """floor((total_count - 1) probs / (1 - probs)), at least 0."""
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        """mean / (1 - probs)."""
        return self.mean / rg.sigmoid(-self.logits)

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

    @lazy_property
    def _gamma(self) -> Gamma:
        """The mixing Gamma(total_count, exp(-logits)) of the Poisson rates."""
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Poisson draws at Gamma-distributed rates, in the parameter's dtype.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        with rg.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return _sampling.poisson(rate)

    def log_prob(self, value: Tensor) -> Tensor:
        """total_count log(1 - p) + value log p + log C(total_count + value - 1, value).

        Args:
            value (Tensor): counts.
        """
        if self._validate_args:
            self._validate_sample(value)
        n = self.total_count
        log_unnormalized = n * rg.logsigmoid(-self.logits) + value * rg.logsigmoid(self.logits)
        log_normalization = -rg.lgamma(n + value) + rg.lgamma(1.0 + value) + rg.lgamma(n)
        log_normalization = log_normalization.masked_fill(n + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
