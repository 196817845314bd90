"""Loss modules: hold the options and call nn.functional."""

from __future__ import annotations

from typing import Optional

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = [
    "L1Loss", "MSELoss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss",
    "SmoothL1Loss", "HuberLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss",
    "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
]


class _Loss(Module):
    reduction: str

    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = F._reduction(size_average, reduce, reduction)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    weight: Optional[Tensor]

    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None,
                 reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 ignore_index: int = -100, reduce: Optional[bool] = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight: Optional[Tensor] = None, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean",
                 pos_weight: Optional[Tensor] = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class SmoothL1Loss(_Loss):
    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        if not isinstance(delta, (float, int)):
            raise TypeError(f"delta must be a float or int, got: {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    def __init__(self, size_average: Optional[bool] = None, reduce: Optional[bool] = None,
                 reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MarginRankingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    def __init__(self, margin: float = 1.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class CosineEmbeddingLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average: Optional[bool] = None,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    def __init__(self, log_input: bool = True, full: bool = False,
                 size_average: Optional[bool] = None, eps: float = 1e-8,
                 reduce: Optional[bool] = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var: Tensor) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)
