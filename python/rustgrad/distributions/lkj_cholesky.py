"""LKJCholesky: the LKJ distribution over Cholesky factors of correlation matrices."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

from . import _rg as rg
from . import constraints
from ._rg import Size, Tensor
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The LKJ distribution of lower Cholesky factors L of dim x dim correlation matrices, whose
    correlation matrix M = L L^T has density proportional to ``det(M) ** (concentration - 1)``
    (concentration 1: uniform over correlation matrices). Samples come from the onion method
    (Lewandowski, Kurowicka and Joe, 2009).

    Args:
        dim (int): the matrices' size (at least 2).
        concentration (float or Tensor): eta (positive).
        validate_args (bool, optional): check the parameters (and log_prob's values).

    Example::

        >>> m = torch.distributions.LKJCholesky(2, torch.tensor(1.0))
        >>> m.log_prob(torch.eye(2))
        tensor(-0.6931)
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Union[Tensor, float] = 1.0,
                 validate_args: Optional[bool] = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the onion method's Beta draws: row i's squared norm below the diagonal is
        # Beta(i / 2, concentration + (dim - 2 - (i - 1)) / 2) (row 0 takes none)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = rg.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = rg.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape: Sequence[int], _instance: Optional[Any] = None) -> LKJCholesky:
        """The parameters expanded to batch_shape.

        Args:
            batch_shape (Size): the new batch shape.
        """
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(Size(tuple(batch_shape) + (self.dim,)))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape: Sequence[int] = Size()) -> Tensor:
        """Cholesky factors by the onion method: row i is a uniform direction in its first i
        coordinates, scaled to the root of a Beta draw, with the diagonal entry completing the
        unit norm.

        Args:
            sample_shape (Size): the leading sample dims.
        """
        with rg.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = rg.randn(self._extended_shape(sample_shape), dtype=y.dtype, device=y.device).tril(-1)
            norm = u.norm(dim=-1, keepdim=True)
            # row 0 has nothing below the diagonal (0 / 0 there): it stays zero
            first = rg.arange(self.dim, device=y.device).reshape(-1, 1) == 0
            direction = rg.where(first, 0.0, u / rg.where(first, 1.0, norm))
            w = y.sqrt() * direction
            tiny = rg.finfo(w.dtype).tiny
            diag = (1 - (w**2).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag.diag_embed()

    def log_prob(self, value: Tensor) -> Tensor:
        """sum_i (2 (eta - 1) + dim - i) log L_ii (i = 2 .. dim) minus the log normalizer.

        Args:
            value (Tensor): Cholesky factors of correlation matrices.
        """
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = rg.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = rg.lgamma(alpha) * dm1
        numerator = rg.mvlgamma(alpha - 0.5, dm1)
        normalizer = 0.5 * dm1 * math.log(math.pi) + numerator - denominator
        return unnormalized - normalizer
