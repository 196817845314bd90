"""Geometric: the number of failures before the first success."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Geometric"]


class Geometric(Distribution):
    """The geometric distribution: the number of failures before the first success of
    independent trials, each a success with probability ``probs`` (or log-odds ``logits``).
    P(k) = (1 - p)**k p for k = 0, 1, 2, ...

    Args:
        probs (float or Tensor): the success probability, in (0, 1].
        logits (float or Tensor): the log-odds of success.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Geometric(torch.tensor([0.5]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-1.3863])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Union[Tensor, float, None] = None, logits: Union[Tensor, float, None] = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = self.probs if probs is not None else self.logits
        batch_shape = Size() if isinstance(param if probs is None else probs, Number) else param.size()
        validate = self._validate_args if validate_args is None else validate_args
        if probs is not None and validate:
            # a success probability of 0 never ends the trials: no distribution
            positive = self.probs > 0
            if not bool(positive.all()):
                raise ValueError(f"Expected parameter probs ({type(self.probs).__name__} of shape "
                                 f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                                 f"found invalid values:\n{self.probs[~positive]}")
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Geometric:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
        super(Geometric, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self) -> Tensor:
        """1 / p - 1."""
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        """0."""
        return rg.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        """(1 / p - 1) / p."""
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The success probability."""
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """floor(log(U) / log(1 - p)), U ~ U(tiny, 1), in the parameter's dtype.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        tiny = rg.finfo(self.probs.dtype).tiny
        with rg.no_grad():
            u = rg.rand(shape, dtype=self.probs.dtype, device=self.probs.device).clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        """value log(1 - p) + log p (0 for value 0 at p = 1).

        Args:
            value (Tensor): counts.
        """
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # at p = 1, value 0 is certain: 0 * log(0) counts as 0
        probs = rg.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        """(-(1 - p) log(1 - p) - p log p) / p."""
        return rg.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs
