"""Wishart: the distribution of scatter matrices of Gaussian vectors."""

from __future__ import annotations

import math
import warnings
from numbers import Number
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from .._ops.decompositions import linalg_slogdet, linalg_solve
from . import _linalg, constraints
from . import _rg as rg
from ._rg import Size, Tensor
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .utils import broadcast_shapes, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma function: sum_{i < p} digamma(x - i / 2)."""
    if not bool((x > (p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = rg.arange(p, dtype=x.dtype, device=x.device) / 2
    return rg.digamma(x.unsqueeze(-1) - halves.expand(tuple(x.shape) + (-1,))).sum(-1)


def _cholesky_solve(b: Tensor, low: Tensor) -> Tensor:
    """(low low^T)^-1 b from the lower Cholesky factor low, differentiated as a function of the
    whole of low through low low^T (as torch.cholesky_solve is: its gradient reaches the upper
    triangle too)."""
    return linalg_solve(low @ low.mT, b)


class Wishart(ExponentialFamily):
    """The Wishart distribution of p x p positive-definite matrices with ``df`` degrees of
    freedom and scale matrix Sigma, given as ``covariance_matrix``, ``precision_matrix``
    (Sigma^-1) or ``scale_tril`` (Sigma's lower Cholesky factor; give exactly one): for integer
    df, the law of sum_i x_i x_i^T over df independent N(0, Sigma) vectors.

    ``rsample`` uses the Bartlett decomposition (chi-squared diagonal, normal lower triangle),
    reparameterized through the chi-squared (Gamma) draws. As torch's, it redraws the samples
    its check flags, up to ``max_try_correction`` times, with a "Singular sample detected."
    warning.

    Args:
        df (float or Tensor): the degrees of freedom, greater than p - 1.
        covariance_matrix (Tensor): Sigma, positive definite.
        precision_matrix (Tensor): Sigma^-1, positive definite.
        scale_tril (Tensor): Sigma's lower Cholesky factor.
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.Wishart(torch.tensor(3.0), covariance_matrix=torch.eye(2))
        >>> m.mean
        tensor([[3., 0.],
                [0., 3.]])
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self) -> Dict[str, constraints.Constraint]:  # type: ignore[override]
        """The matrices' constraints, and df > p - 1."""
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df: Union[Tensor, float], covariance_matrix: Optional[Tensor] = None,
                 precision_matrix: Optional[Tensor] = None, scale_tril: Optional[Tensor] = None,
                 validate_args: Optional[bool] = None) -> None:
        given = [p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None]
        if len(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = rg.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = Size(param.shape[-2:])
        p = event_shape[-1]
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(full)
        else:
            self.precision_matrix = param.expand(full)
        if bool((self.df < p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _linalg.cholesky(covariance_matrix)
        else:
            assert precision_matrix is not None
            self._unbroadcasted_scale_tril = _linalg.precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape: Size) -> Chi2:
        """Chi2(df - i) for i < p: the squared diagonal of the Bartlett factor."""
        low = self._unbroadcasted_scale_tril
        steps = rg.arange(self._event_shape[-1], dtype=low.dtype, device=low.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> Wishart:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = Size(tuple(batch_shape) + tuple(self.event_shape))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self) -> Tensor:
        """Sigma's lower Cholesky factor."""
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """Sigma."""
        low = self._unbroadcasted_scale_tril
        return (low @ low.mT).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """Sigma^-1."""
        low = self._unbroadcasted_scale_tril
        eye = rg.eye(self._event_shape[-1], device=low.device, dtype=low.dtype)
        return _cholesky_solve(eye.expand(low.shape), low).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    @property
    def mean(self) -> Tensor:
        """df * Sigma."""
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """(df - p - 1) Sigma, NaN where df <= p + 1."""
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = rg.where(factor <= 0, math.nan, factor)
        return factor.view(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """df (Sigma_ij**2 + Sigma_ii Sigma_jj), entrywise."""
        v = self.covariance_matrix
        d = v.diagonal(dim1=-2, dim2=-1)
        return self.df.view(tuple(self._batch_shape) + (1, 1)) * (v.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        p = self._event_shape[-1]
        eps = rg.finfo(self._unbroadcasted_scale_tril.dtype).eps
        diag = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps).diag_embed(dim1=-2, dim2=-1)
        below = rg.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,),
                         dtype=diag.dtype, device=diag.device)
        factor = self._unbroadcasted_scale_tril @ (diag + vec_to_tril_matrix(below, diag=-1))
        return factor @ factor.mT

    def _flags(self, sample: Tensor, good: bool) -> Tensor:
        # per sample (batch dims folded in by any): the samples the support check passes (good)
        # or fails
        ok = self.support.check(sample)
        flags = ok if good else ~ok
        if self._batch_shape:
            flags = flags.amax(self._batch_dims)
        return flags

    def rsample(self, sample_shape: Sequence[int] = Size(), max_try_correction: Optional[int] = None) -> Tensor:
        """Bartlett draws Sigma^(1/2) A A^T Sigma^(T/2): differentiable in df (through the
        chi-squared draws) and in the scale.

        As torch's, the samples the first check flags are drawn again (with a "Singular sample
        detected." warning), and then any singular ones, up to max_try_correction times. The
        first check flags the samples torch's flags (those that pass the support check); the
        redrawn samples follow the same law, so the result is a Wishart sample either way.

        Args:
            sample_shape (Size): the leading sample dims.
            max_try_correction (int, optional): how many redraws at most (default 10).
        """
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        flagged = self._flags(sample, good=True)
        if bool(flagged.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            extra = (1,) * (len(self._batch_shape) + 2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = rg.where(flagged.reshape(tuple(sample_shape) + extra), fresh, sample)
                flagged = flagged & self._flags(fresh, good=False)
                if not bool(flagged.any()):
                    break
        return sample

    def log_prob(self, value: Tensor) -> Tensor:
        """-df (p log 2 / 2 + log|L|) - mvlgamma(df / 2, p) + (df - p - 1) / 2 log|value|
        - tr(Sigma^-1 value) / 2, L Sigma's Cholesky factor.

        Args:
            value (Tensor): positive-definite matrices.
        """
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        low = self._unbroadcasted_scale_tril
        log_det_low = low.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        solved = _cholesky_solve(value, low)
        return (-nu * (p * _LOG_2 / 2 + log_det_low) - rg.mvlgamma(nu / 2, p=p)
                + (nu - p - 1) / 2 * linalg_slogdet(value).logabsdet
                - solved.diagonal(dim1=-2, dim2=-1).sum(-1) / 2)

    def entropy(self) -> Tensor:
        """(p + 1)(p log 2 / 2 + log|L|) + mvlgamma(df / 2, p) - (df - p - 1) / 2 mvdigamma(df / 2, p)
        + df p / 2."""
        nu = self.df
        p = self._event_shape[-1]
        log_det_low = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + log_det_low) + rg.mvlgamma(nu / 2, p=p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self) -> Tuple[Tensor, Tensor]:
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:  # type: ignore[override]
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-linalg_slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + rg.mvlgamma(y + (p + 1) / 2, p=p))
