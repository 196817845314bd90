"""MultiLabelSoftMarginLoss: one logistic loss per class, averaged over the classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._tensor import Tensor
from .. import functional as F
from .loss import _WeightedLoss

__all__ = ["MultiLabelSoftMarginLoss"]


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """A multi-label one-versus-all loss: the binary logistic loss of each class, averaged over
    the classes, for targets of 0 or 1 per class.

    Args:
        weight (Tensor, optional): a weight for each of the ``C`` classes.
        size_average (bool, optional): deprecated; use ``reduction``.
        reduce (bool, optional): deprecated; use ``reduction``.
        reduction (str): ``'none'`` | ``'mean'`` | ``'sum'``: return the loss of each
            element, their mean or their sum. Default: ``'mean'``.

    Shape:
        - Input: ``(N, C)`` or ``(C)``.
        - Target: the input's shape, 0 or 1.
        - Output: a scalar; ``(N)`` with ``reduction='none'``.
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Computes the loss of ``input`` and ``target`` (see the class docstring)."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)

    if TYPE_CHECKING:  # module(x) is typed as forward(x)
        __call__ = forward
