"""LowRankMultivariateNormal: a Gaussian with a low-rank-plus-diagonal covariance."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from . import _linalg, constraints
from . import _rg as rg
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import _standard_normal, broadcast_tensors, lazy_property

__all__ = ["LowRankMultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _capacitance_tril(w: Tensor, d: Tensor) -> Tensor:
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W (r x r for rank r)."""
    r = w.shape[-1]
    wt_dinv = w.mT / d.unsqueeze(-2)
    cap = wt_dinv @ w + rg.eye(r, dtype=w.dtype, device=w.device)
    return _linalg.cholesky(cap)


class LowRankMultivariateNormal(Distribution):
    """The multivariate normal distribution with covariance ``cov_factor @ cov_factor.mT +
    diag(cov_diag)``: log_prob and entropy cost O(D r**2) through the Woodbury identity and
    the matrix determinant lemma (r the rank), not O(D**3).

    Args:
        loc (Tensor): the mean, ``(*batch, D)``.
        cov_factor (Tensor): the low-rank factor, ``(*batch, D, r)``.
        cov_diag (Tensor): the diagonal part, ``(*batch, D)``, positive.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.LowRankMultivariateNormal(torch.zeros(2), torch.zeros(2, 1),
        ...                                                    torch.ones(2))
        >>> m.log_prob(torch.zeros(2))
        tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: Optional[bool] = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = Size(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != tuple(event_shape):
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != tuple(event_shape):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, diag_ = broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc = loc_[..., 0]
        self.cov_diag = diag_[..., 0]
        batch_shape = self.loc.shape[:-1]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> LowRankMultivariateNormal:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        super(LowRankMultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        """The covariance's diagonal: sum of cov_factor**2 over the rank, plus cov_diag."""
        w = self._unbroadcasted_cov_factor
        out = w.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return out.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """cov_factor @ cov_factor.mT + diag(cov_diag)."""
        w = self._unbroadcasted_cov_factor
        cov = w @ w.mT + self._unbroadcasted_cov_diag.diag_embed()
        return cov.expand(self._matrix_shape())

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance matrix."""
        w = self._unbroadcasted_cov_factor
        root = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        # cov = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: factor the well-conditioned middle
        scaled = w / root
        inner = scaled @ scaled.mT + rg.eye(w.shape[-2], dtype=w.dtype, device=w.device)
        return (root * _linalg.cholesky(inner)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse covariance, by the Woodbury identity."""
        w = self._unbroadcasted_cov_factor
        d = self._unbroadcasted_cov_diag
        a = _linalg.solve_triangular(self._capacitance_tril, w.mT / d.unsqueeze(-2), upper=False)
        prec = (1 / d).diag_embed() - a.mT @ a
        return prec.expand(self._matrix_shape())

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc + cov_factor @ eps_w + sqrt(cov_diag) * eps_d: differentiable in every parameter.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        w = self._unbroadcasted_cov_factor
        w_shape = tuple(shape[:-1]) + tuple(w.shape[-1:])
        eps_w = _standard_normal(w_shape, dtype=self.loc.dtype, device=self.loc.device)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (w @ eps_w.unsqueeze(-1)).squeeze(-1) + self._unbroadcasted_cov_diag.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        # the matrix determinant lemma: det(W W^T + D) = det(capacitance) det(D)
        cap_half = self._capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return 2 * cap_half + self._unbroadcasted_cov_diag.log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """The Gaussian log density, by the Woodbury identity and the determinant lemma.

        Args:
            value (Tensor): vectors of the event size.
        """
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        w = self._unbroadcasted_cov_factor
        d = self._unbroadcasted_cov_diag
        scaled = diff / d
        # x^T (W W^T + D)^-1 x = x^T D^-1 x - |L_C^-1 W^T D^-1 x|^2
        wt = (w.mT @ scaled.unsqueeze(-1)).squeeze(-1)
        m = (diff * scaled).sum(-1) - _linalg.solve_lower_vec(self._capacitance_tril, wt).pow(2).sum(-1)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + m + self._log_det())

    def entropy(self) -> Tensor:
        """(D (1 + log 2 pi) + log det covariance) / 2."""
        h = 0.5 * (self._event_shape[0] * (1.0 + _LOG_2PI) + self._log_det())
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
