"""Dirichlet: a distribution over the probability simplex."""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

from . import _rg as rg
from . import _special, constraints
from ._rg import Size, Tensor
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution over K-vectors on the simplex, with concentrations ``(*batch, K)``.

    Samples are normalized Gamma draws; ``rsample`` differentiates through them (the Gamma
    draws' implicit gradient, then the normalization), an unbiased pathwise gradient as torch's
    (whose own implicit Dirichlet gradient gives other per-sample values).

    Args:
        concentration (Tensor): the concentrations (positive), at least one-dimensional.
        validate_args (bool, optional): check the parameter (and log_prob's values).

    Example::

        >>> m = torch.distributions.Dirichlet(torch.tensor([1.0, 1.0, 1.0]))
        >>> m.log_prob(torch.tensor([0.2, 0.3, 0.5]))
        tensor(0.6931)
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: Optional[bool] = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Dirichlet:
        """The concentrations expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Normalized Gamma(concentration) draws, kept inside (0, 1): differentiable in the
        concentrations.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        gammas = _special.standard_gamma(self.concentration.expand(shape))
        out = gammas / gammas.sum(-1, keepdim=True)
        finfo = rg.finfo(out.dtype)
        return out + (out.detach().clamp(min=finfo.tiny, max=1 - finfo.eps) - out.detach())

    def log_prob(self, value: Tensor) -> Tensor:
        """sum((c - 1) log value) + lgamma(sum c) - sum lgamma(c), c the concentrations.

        Args:
            value (Tensor): points of the simplex.
        """
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return rg.xlogy(c - 1.0, value).sum(-1) + rg.lgamma(c.sum(-1)) - rg.lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        """c / sum(c)."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        """(c - 1) / sum(c - 1) for concentrations above 1; where every concentration is below 1
        (the density is unbounded at every corner), the first corner, as torch picks it."""
        cm1 = (self.concentration - 1).clamp(min=0.0)
        corner = (self.concentration < 1).all(-1, keepdim=True)
        total = cm1.sum(-1, keepdim=True)
        mode = cm1 / rg.where(corner, 1.0, total)  # no 0/0 at the corners, replaced below
        k = cm1.shape[-1]
        one_hot = (cm1.argmax(-1, keepdim=True) == rg.arange(k, device=cm1.device)).to(mode.dtype)
        return rg.where(corner, one_hot, mode)

    @property
    def variance(self) -> Tensor:
        """c (c0 - c) / (c0 ** 2 (c0 + 1)), c0 = sum(c)."""
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0.pow(2) * (c0 + 1))

    def entropy(self) -> Tensor:
        """The entropy: log B(c) + (c0 - K) digamma(c0) - sum((c - 1) digamma(c))."""
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return (rg.lgamma(c).sum(-1) - rg.lgamma(c0) - (k - c0) * rg.digamma(c0)
                - ((c - 1.0) * rg.digamma(c)).sum(-1))

    @property
    def _natural_params(self) -> Tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return rg.lgamma(x).sum(-1) - rg.lgamma(x.sum(-1))
