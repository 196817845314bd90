"""RelaxedBernoulli: the Concrete / Gumbel-sigmoid relaxation of a Bernoulli."""

from __future__ import annotations

from numbers import Number
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(Distribution):
    """The logit of a RelaxedBernoulli sample: ``(logits + L) / temperature`` with L a standard
    logistic draw (Maddison et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the probability of 1.
        logits (float or Tensor): the log-odds of 1.
        validate_args (bool, optional): check the parameter (and log_prob's values).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature: Tensor, probs: Union[Tensor, float, None] = None,
                 logits: Union[Tensor, float, None] = None, validate_args: Optional[bool] = None) -> None:
        self.temperature = temperature
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

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> LogitRelaxedBernoulli:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = Size(batch_shape)
        new.temperature = self.temperature
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(LogitRelaxedBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    @lazy_property
    def logits(self) -> Tensor:
        """The log-odds of 1."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of 1."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        """The parameter's shape."""
        return self._param.size()

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        """True."""
        return True

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """(logit(U) + logit(p)) / temperature, U uniform (clamped): differentiable in p.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(rg.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        """The logistic log density of value at location logits / temperature.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """The Concrete (Gumbel-sigmoid) relaxation of a Bernoulli: samples in (0, 1) that approach
    0/1 draws as the temperature goes to 0, reparameterized (Maddison et al., 2017; Jang et
    al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the probability of 1.
        logits (float or Tensor): the log-odds of 1.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.RelaxedBernoulli(torch.tensor([0.5]), probs=torch.tensor([0.3]))
        >>> m.rsample((2,)).shape
        torch.Size([2, 1])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Union[Tensor, float, None] = None,
                 logits: Union[Tensor, float, None] = None, validate_args: Optional[bool] = None) -> None:
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> RelaxedBernoulli:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """The log-odds of 1."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """The probability of 1."""
        return self.base_dist.probs
