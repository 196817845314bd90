"""PairwiseDistance and CosineSimilarity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension.

    Args:
        p (float): the norm's order. Default: ``2.0``.
        eps (float): added to the difference, avoiding a zero norm. Default: ``1e-6``.
        keepdim (bool): keep the last dimension with size 1. Default: ``False``.

    Shape:
        - Input1: ``(N, D)`` or ``(D)``.
        - Input2: broadcastable to Input1.
        - Output: ``(N)`` or ``()`` (``(N, 1)`` or ``(1)`` with ``keepdim``).

    Example::

        >>> nn.PairwiseDistance(eps=0.)(torch.tensor([[0., 0.]]), torch.tensor([[3., 4.]]))
        tensor([5.])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """Returns ``pairwise_distance(x1, x2, p, eps, keepdim)``."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``.

    Args:
        dim (int): the dimension of the vectors. Default: ``1``.
        eps (float): the smallest norm divided by. Default: ``1e-8``.

    Example::

        >>> nn.CosineSimilarity()(torch.tensor([[1., 0.]]), torch.tensor([[1., 1.]]))
        tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """Returns ``cosine_similarity(x1, x2, dim, eps)``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
