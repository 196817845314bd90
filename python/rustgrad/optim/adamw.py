"""AdamW: Adam with decoupled weight decay (default 1e-2)."""

from __future__ import annotations

from typing import Optional, Tuple

from .adam import Adam
from .optimizer import ParamsT

__all__ = ["AdamW"]


class AdamW(Adam):
    """AdamW: Adam with decoupled weight decay.

    Each step first shrinks the weights, ``p *= 1 - lr * weight_decay``, then applies Adam's
    update (see `Adam`) with the plain gradient.

    Args:
        params (iterable): the parameters to optimize, or dicts defining parameter groups.
        lr (float): the learning rate. Default: ``1e-3``.
        betas (Tuple[float, float]): the decay rates of the moment estimates.
            Default: ``(0.9, 0.999)``.
        eps (float): added to the denominator for numerical stability. Default: ``1e-8``.
        weight_decay (float): the decoupled weight decay coefficient. Default: ``1e-2``.
        amsgrad (bool): use the AMSGrad variant. Default: ``False``.
        maximize (bool): ascend the objective (use -grad). Default: ``False``.
        foreach, differentiable, fused: accepted for torch compatibility; the single-tensor
            update is always used.
        capturable (bool): accepted for torch compatibility.
    """
    def __init__(self, params: ParamsT, lr: float = 1e-3, betas: Tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: Optional[bool] = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: Optional[bool] = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
