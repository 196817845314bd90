"""ContinuousBernoulli: the normalized Bernoulli likelihood as a density on [0, 1]."""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Optional, Sequence, Tuple, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019):
    density ``C(p) p**x (1 - p)**(1 - x)``, parameterized by ``probs`` p in (0, 1) or by
    ``logits`` (give one of them). p is no probability and the logits are no log-odds; they
    only share the Bernoulli's names.

    Near p = 1/2 the normalizer, the mean and the variance are singular in their closed forms
    and are taken from Taylor expansions inside ``lims`` (as torch's).

    Args:
        probs (float or Tensor): parameters in (0, 1) (clamped away from 0 and 1).
        logits (float or Tensor): real parameters whose sigmoid is probs.
        lims (tuple of float): the interval around 1/2 where the Taylor expansions are used.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.ContinuousBernoulli(torch.tensor([0.3]))
        >>> m.mean
        tensor([0.4302])
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Optional[Union[Tensor, float]] = None, logits: Optional[Union[Tensor, float]] = None,
                 lims: Tuple[float, float] = (0.499, 0.501), validate_args: Optional[bool] = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (given,) = broadcast_all(probs)
            # checked before the clamp, which would make every value pass
            if validate_args is not None and not bool(self.arg_constraints["probs"].check(given).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(given)
        else:
            assert logits is not None
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> ContinuousBernoulli:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args: Any, **kwargs: Any) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)

    def _outside_unstable_region(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self) -> Tensor:
        # probs, with those of the unstable region moved to its edge (their closed forms are
        # computed but not used)
        return rg.where(self._outside_unstable_region(), self.probs, rg.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Tensor:
        """log C(p), the log normalizer as a function of probs."""
        p = self._cut_probs()
        below = rg.where(p <= 0.5, p, rg.zeros_like(p))
        above = rg.where(p >= 0.5, p, rg.ones_like(p))
        closed = ((-p).log1p() - p.log()).abs().log() - rg.where(
            p <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        d2 = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2
        return rg.where(self._outside_unstable_region(), closed, taylor)

    @property
    def mean(self) -> Tensor:
        """p / (2p - 1) + 1 / (log(1 - p) - log p), by its Taylor expansion near 1/2."""
        p = self._cut_probs()
        closed = p / (2.0 * p - 1.0) + 1.0 / ((-p).log1p() - p.log())
        d = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d.pow(2)) * d
        return rg.where(self._outside_unstable_region(), closed, taylor)

    @property
    def stddev(self) -> Tensor:
        """sqrt(variance)."""
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        """p (p - 1) / (1 - 2p)**2 + 1 / (log(1 - p) - log p)**2, by its Taylor expansion near 1/2."""
        p = self._cut_probs()
        closed = p * (p - 1.0) / (1.0 - 2.0 * p).pow(2) + 1.0 / ((-p).log1p() - p.log()).pow(2)
        d2 = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2
        return rg.where(self._outside_unstable_region(), closed, taylor)

    @lazy_property
    def logits(self) -> Tensor:
        """log(probs / (1 - probs))."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        """sigmoid(logits), clamped away from 0 and 1."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self) -> Size:
        """The parameter's shape."""
        return self._param.size()

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """icdf of uniform draws, outside autograd.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        with rg.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """icdf of uniform draws: differentiable in the parameter.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        u = rg.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value: Tensor) -> Tensor:
        """value log p + (1 - value) log(1 - p) + log C(p), from the logits.

        Args:
            value (Tensor): points of [0, 1].
        """
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = rg.binary_cross_entropy_with_logits(logits, value, reduction="none")
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        """(p**x (1 - p)**(1 - x) + p - 1) / (2p - 1) (x itself near p = 1/2), 0 below 0 and 1 above 1.

        Args:
            value (Tensor): the points.
        """
        if self._validate_args:
            self._validate_sample(value)
        p = self._cut_probs()
        closed = (p.pow(value) * (1.0 - p).pow(1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = rg.where(self._outside_unstable_region(), closed, value)
        return rg.where(value <= 0.0, rg.zeros_like(value),
                        rg.where(value >= 1.0, rg.ones_like(value), inside))

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse of cdf (value itself near p = 1/2).

        Args:
            value (Tensor): probabilities.
        """
        p = self._cut_probs()
        closed = (((-p) + value * (2.0 * p - 1.0)).log1p() - (-p).log1p()) / (p.log() - (-p).log1p())
        return rg.where(self._outside_unstable_region(), closed, value)

    def entropy(self) -> Tensor:
        """mean (log(1 - p) - log p) - log C(p) - log(1 - p)."""
        log_q = (-self.probs).log1p()
        log_p = self.probs.log()
        return self.mean * (log_q - log_p) - self._cont_bern_log_norm() - log_q

    @property
    def _natural_params(self) -> Tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        """The log normalizer as a function of the natural parameter (by its Taylor expansion
        inside the limits shifted by -1/2, as torch's)."""
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        outside = (x <= lo) | (x > hi)
        cut = rg.where(outside, x, rg.full_like(x, lo))
        closed = cut.expm1().abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return rg.where(outside, closed, taylor)
