"""Multinomial: the counts of each category among total_count independent categorical draws."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .binomial import Binomial
from .categorical import Categorical
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Multinomial"]


class Multinomial(Distribution):
    """The multinomial distribution: how many of ``total_count`` independent draws fall in each
    category, the categories' probabilities given by ``probs`` or ``logits`` over the last dim
    (normalized; give one of them).

    ``sample`` needs one total_count for the whole batch; ``log_prob`` takes any counts (the
    total_count is the sum of each value).

    Args:
        total_count (int): the number of draws.
        probs (Tensor): nonnegative category weights (normalized to sum to 1).
        logits (Tensor): unnormalized category log-probabilities.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Multinomial(4, torch.tensor([1.0, 1.0]))
        >>> m.log_prob(torch.tensor([2.0, 2.0]))
        tensor(-0.9808)
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    total_count: int

    @property
    def mean(self) -> Tensor:
        """total_count * probs."""
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        """total_count * probs * (1 - probs)."""
        return self.total_count * self.probs * (1 - self.probs)

    def __init__(self, total_count: int = 1, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Multinomial:
        """The parameters expanded to batch_shape (+ the categories dim).

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = Size(batch_shape)
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = self._binomial.expand(Size(tuple(batch_shape) + tuple(self.event_shape)))
        super(Multinomial, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        """Nonnegative integer vectors summing to at most total_count."""
        return constraints.multinomial(self.total_count)

    @property
    def logits(self) -> Tensor:
        """Normalized log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        """Normalized probabilities."""
        return self._categorical.probs

    @property
    def param_shape(self) -> Size:
        """The parameter's shape: batch_shape + (K,)."""
        return self._categorical.param_shape

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Counts (in the probabilities' dtype) of total_count categorical draws per sample.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        sample_shape = Size(sample_shape)
        with rg.no_grad():
            draws = self._categorical.sample(Size((self.total_count,) + tuple(sample_shape)))
            # the draws' dim last: (*sample_shape, *batch_shape, total_count)
            order = list(range(1, draws.dim())) + [0]
            draws = draws.permute(*order)
            counts = rg.zeros(self._extended_shape(sample_shape), dtype=draws.dtype, device=draws.device)
            counts.scatter_add_(-1, draws, rg.ones_like(draws))
            return counts.type_as(self.probs)

    def entropy(self) -> Tensor:
        """n H(categorical) - log n! + sum_k E[log x_k!], the last from the binomial marginals."""
        n = rg.tensor(self.total_count, dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - rg.lgamma(n + 1)
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        weights = rg.lgamma(support + 1)
        term2 = (binomial_probs * weights).sum([0, -1])
        return term1 + term2

    def log_prob(self, value: Tensor) -> Tensor:
        """log n! - sum log x_k! + sum x_k log p_k, n = sum x_k (0 log 0 counts as 0).

        Args:
            value (Tensor): count vectors.
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_factorial_n = rg.lgamma(value.sum(-1) + 1)
        log_factorial_xs = rg.lgamma(value + 1).sum(-1)
        logits = rg.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers
