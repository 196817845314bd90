"""MultivariateNormal: the Gaussian distribution of a vector."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

from . import _linalg, constraints
from ._rg import Size, Tensor
from .distribution import Distribution
from .utils import _standard_normal, broadcast_shapes, lazy_property

__all__ = ["MultivariateNormal"]

_LOG_2PI = math.log(2 * math.pi)


def _batch_mahalanobis(scale_tril: Tensor, diff: Tensor) -> Tensor:
    """diff^T (L L^T)^-1 diff = |L^-1 diff|^2 per vector, L lower triangular; diff may have
    more (sample) batch dims than L."""
    return _linalg.solve_lower_vec(scale_tril, diff).pow(2).sum(-1)


class MultivariateNormal(Distribution):
    """The multivariate normal distribution N(loc, covariance_matrix), parameterized by exactly
    one of the covariance matrix, the precision matrix (its inverse) or ``scale_tril``, the
    lower-triangular Cholesky factor of the covariance with a positive diagonal (the cheapest).

    Every method works through scale_tril; a covariance or precision matrix is factored once
    (rustgrad.linalg.cholesky). The triangular solves of log_prob and the KL divergences are
    written in rustgrad's differentiable ops, one step per dimension (rustgrad.linalg has no
    solve_triangular yet), which suits event sizes up to a few dozen.

    Args:
        loc (Tensor): the mean, ``(*batch, D)``.
        covariance_matrix (Tensor): ``(*batch, D, D)``, symmetric positive definite.
        precision_matrix (Tensor): ``(*batch, D, D)``, symmetric positive definite.
        scale_tril (Tensor): ``(*batch, D, D)``, lower triangular with a positive diagonal.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.MultivariateNormal(torch.zeros(2), torch.eye(2))
        >>> m.log_prob(torch.zeros(2))
        tensor(-1.8379)
    """

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        name = ("scale_tril" if scale_tril is not None else
                "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        if given.dim() < 2:
            what = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = broadcast_shapes(given.shape[:-2], loc.shape[:-1])
        setattr(self, name, given.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        event_shape = self.loc.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _linalg.cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = _linalg.precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> MultivariateNormal:
        """The parameters expanded to batch_shape (the factor is shared, not copied).

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        super(MultivariateNormal, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self) -> tuple:
        return tuple(self._batch_shape) + tuple(self._event_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """scale_tril @ scale_tril.mT."""
        low = self._unbroadcasted_scale_tril
        return (low @ low.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance matrix."""
        return _linalg.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """loc."""
        return self.loc

    @property
    def variance(self) -> Tensor:
        """The diagonal of the covariance matrix."""
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    def rsample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """loc + scale_tril @ eps, eps ~ N(0, I): differentiable in every parameter.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        """-(D log(2 pi) + mahalanobis distance**2) / 2 - log det(scale_tril).

        Args:
            value (Tensor): vectors of the event size.
        """
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return -0.5 * (self._event_shape[0] * _LOG_2PI + m) - half_log_det

    def entropy(self) -> Tensor:
        """D (1 + log(2 pi)) / 2 + log det(scale_tril)."""
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        h = 0.5 * self._event_shape[0] * (1.0 + _LOG_2PI) + half_log_det
        if len(self._batch_shape) == 0:
            return h
        return h.expand(self._batch_shape)
