"""MultiLabelSoftMarginLoss: one logistic loss per class, averaged over the classes."""

from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .loss import _WeightedLoss

__all__ = ["MultiLabelSoftMarginLoss"]


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """F.multilabel_soft_margin_loss with this module's weight and reduction."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)
