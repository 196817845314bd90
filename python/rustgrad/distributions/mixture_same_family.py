"""MixtureSameFamily: a mixture of components of one distribution family."""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture whose components are the rightmost batch entries of one distribution,
    weighted by a Categorical: ``p(x) = sum_k w_k p_k(x)``.

    Args:
        mixture_distribution (Categorical): the weights, batch shape broadcastable with the
            component distribution's batch shape less its last dim.
        component_distribution (Distribution): the components along its last batch dim.
        validate_args (bool, optional): check values given to log_prob.

    Example::

        >>> from rustgrad.distributions import Categorical, MixtureSameFamily, Normal
        >>> mix = Categorical(torch.ones(2))
        >>> comp = Normal(torch.tensor([-1.0, 1.0]), torch.tensor([1.0, 1.0]))
        >>> gmm = MixtureSameFamily(mix, comp)
        >>> gmm.mean
        tensor(0.)
    """

    arg_constraints: Dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(self, mixture_distribution: Categorical, component_distribution: Distribution,
                 validate_args: Optional[bool] = None) -> None:
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of torch.distributions.Distribution")
        mix_batch = mixture_distribution.batch_shape
        comp_batch = Size(component_distribution.batch_shape[:-1])  # a Size slice is a tuple in rustgrad
        for a, b in zip(reversed(mix_batch), reversed(comp_batch)):
            if a != 1 and b != 1 and a != b:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mix_batch}) is not compatible with "
                                 f"`component_distribution.batch_shape`({comp_batch})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(comp_batch, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> MixtureSameFamily:
        """Both distributions expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        batch_shape = Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            tuple(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        super(MixtureSameFamily, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self) -> Any:
        """The components' support."""
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)  # type: ignore[arg-type]

    @property
    def mixture_distribution(self) -> Categorical:
        """The Categorical of the weights."""
        return self._mixture_distribution

    @property
    def component_distribution(self) -> Distribution:
        """The components."""
        return self._component_distribution

    def _weights(self) -> Tensor:
        # the mixture probs with the component dim placed before the event dims
        probs = self.mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self) -> Tensor:
        """sum_k w_k mean_k."""
        return (self._weights() * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: E[var_k] + var[mean_k]."""
        w = self._weights()
        dim = -1 - self._event_ndims
        mean_cond_var = (w * self.component_distribution.variance).sum(dim)
        var_cond_mean = (w * (self.component_distribution.mean - self._pad(self.mean)).pow(2.0)).sum(dim)
        return mean_cond_var + var_cond_mean

    def cdf(self, x: Tensor) -> Tensor:
        """sum_k w_k cdf_k(x).

        Args:
            x (Tensor): the points.
        """
        x = self._pad(x)
        return (self.component_distribution.cdf(x) * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x: Tensor) -> Tensor:
        """log sum_k w_k p_k(x), by logsumexp.

        Args:
            x (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(x)
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)
        log_mix = rg.log_softmax(self.mixture_distribution.logits, dim=-1)
        return (log_prob_x + log_mix).logsumexp(-1)

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """A component index drawn per sample, then that component's sample.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        sample_shape = Size(sample_shape)
        with rg.no_grad():
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            index = self.mixture_distribution.sample(sample_shape)
            comp = self.component_distribution.sample(sample_shape)
            index = index.reshape(tuple(index.shape) + (1,) * (len(es) + 1))
            index = index.expand(tuple(index.shape[:gather_dim]) + (1,) + es)
            # the mixture's batch may broadcast against the components'
            index = index.expand(tuple(comp.shape[:gather_dim]) + (1,) + es)
            return comp.gather(gather_dim, index).squeeze(gather_dim)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(\n  {self.mixture_distribution},\n  {self.component_distribution})"
