"""Bernoulli: a 0/1 variable."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli"]


class Bernoulli(ExponentialFamily):
    """The Bernoulli distribution: 1 with probability ``probs``, else 0 (give ``probs`` or the
    log-odds ``logits``, not both). Samples hold 0. and 1. in the parameter's dtype.

    Args:
        probs (float or Tensor): the probability of 1.
        logits (float or Tensor): the log-odds of 1.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Bernoulli(torch.tensor([0.25]))
        >>> m.log_prob(torch.tensor([1.0]))
        tensor([-1.3863])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Union[Tensor, float, None] = None, logits: Union[Tensor, float, None] = None,
                 validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Bernoulli:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(Bernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    @property
    def mean(self) -> Tensor:
        """probs."""
        return self.probs

    @property
    def mode(self) -> Tensor:
        """1 where probs > 1/2, 0 where below, NaN at exactly 1/2."""
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return rg.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self) -> Tensor:
        """probs * (1 - probs)."""
        return self.probs * (1 - self.probs)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds (from probs, clamped away from 0 and 1)."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of 1 (sigmoid of the logits)."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The parameter's shape."""
        return self._param.size()

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """0/1 samples in the parameter's dtype.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        with rg.no_grad():
            return self.probs.expand(shape).bernoulli()

    def log_prob(self, value: Tensor) -> Tensor:
        """value * log p + (1 - value) * log(1 - p), computed stably from the logits.

        Args:
            value (Tensor): 0/1 values.
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -rg.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        """-p log p - (1 - p) log(1 - p)."""
        return rg.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """The values 0. and 1. along a new leading dim.

        Args:
            expand (bool): expand over the batch shape (else the batch dims are 1).
        """
        values = rg.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values

    @property
    def _natural_params(self) -> Tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return x.exp().log1p()
