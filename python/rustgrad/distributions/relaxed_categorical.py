"""RelaxedOneHotCategorical: the Concrete / Gumbel-softmax relaxation of a OneHotCategorical."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .categorical import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical sample: ``log_softmax((logits + G) / temperature)``
    with G standard Gumbel draws (Maddison et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
        validate_args (bool, optional): check the parameter (and log_prob's values).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> ExpRelaxedCategorical:
        """The categorical expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        super(ExpRelaxedCategorical, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    @property
    def param_shape(self) -> Size:
        """The parameter's shape."""
        return self._categorical.param_shape

    @property
    def logits(self) -> Tensor:
        """The normalized event log-probabilities."""
        return self._categorical.logits

    @property
    def probs(self) -> Tensor:
        """The event probabilities."""
        return self._categorical.probs

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """log_softmax((logits + G) / temperature), G ~ Gumbel(0, 1): differentiable in logits.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(rg.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        """The log density of the ExpConcrete distribution at value.

        Args:
            value (Tensor): log-simplex points.
        """
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # log (K-1)! + (K-1) log(temperature): the normalizer of the density
        log_scale = rg.full_like(self.temperature, float(k)).lgamma() + self.temperature.log() * (k - 1)
        score = logits - value * self.temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """The Concrete (Gumbel-softmax) relaxation of a OneHotCategorical: points of the simplex
    that approach one-hot draws as the temperature goes to 0, reparameterized (Maddison et
    al., 2017; Jang et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.RelaxedOneHotCategorical(torch.tensor([2.2]),
        ...                                                  torch.tensor([0.1, 0.2, 0.3, 0.4]))
        >>> m.rsample().shape
        torch.Size([4])
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature: Tensor, probs: Optional[Tensor] = None, logits: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> RelaxedOneHotCategorical:
        """The parameter expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)  # type: ignore[return-value]

    @property
    def temperature(self) -> Tensor:
        """The relaxation temperature."""
        return self.base_dist.temperature

    @property
    def logits(self) -> Tensor:
        """The normalized event log-probabilities."""
        return self.base_dist.logits

    @property
    def probs(self) -> Tensor:
        """The event probabilities."""
        return self.base_dist.probs
