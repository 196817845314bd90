"""ExponentialFamily: distributions with densities exp(<t(x), theta> - F(theta) + k(x))."""

from __future__ import annotations

from typing import Any, Tuple

from . import _rg as rg
from ._rg import Tensor
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """The base of exponential-family distributions, whose density is
    ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))`` with natural parameters theta,
    sufficient statistic t, log-normalizer F and carrier measure k.

    A subclass gives ``_natural_params``, ``_log_normalizer`` and ``_mean_carrier_measure``
    (E[k(x)]); the entropy then follows by automatic differentiation of F (a Bregman
    divergence), and so does the KL divergence between two members of one family.
    """

    @property
    def _natural_params(self) -> Tuple[Tensor, ...]:
        """The natural parameters theta, from the distribution's own parameters."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """F(theta), the log-normalizer."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        """E[k(x)], the expected carrier measure."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, ``F(theta) - <theta, grad F(theta)> - E[k(x)]``, with grad F by autograd."""
        result: Any = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = rg.grad(lg_normal.sum(), nparams, create_graph=True)
        result = result + lg_normal
        for theta, g in zip(nparams, gradients):
            result = result - (theta * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
