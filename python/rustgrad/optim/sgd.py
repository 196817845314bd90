"""SGD with momentum, dampening, Nesterov, weight decay and maximize (torch's single-tensor
update, with its rounding)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from .._tensor import Tensor
from .optimizer import Optimizer, ParamsT, _fma

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: Optional[bool] = None,
                 differentiable: bool = False, fused: Optional[bool] = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            momentum = group["momentum"]
            dampening = group["dampening"]
            wd = group["weight_decay"]
            nesterov = group["nesterov"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                xp = p._backend
                g = p.grad._data
                pd = p._data
                if maximize:
                    g = -g
                if wd != 0:
                    g = _fma(xp, wd, pd, g)
                if momentum != 0:
                    state = self.state[p]
                    buf: Optional[Tensor] = state.get("momentum_buffer")
                    if buf is None:
                        buf = p.grad.detach().clone()
                        buf._data[...] = g
                        state["momentum_buffer"] = buf
                    else:
                        bd = buf._data
                        bd *= momentum
                        bd[...] = _fma(xp, 1 - dampening, g, bd)
                        buf._bump_version()
                    g = _fma(xp, momentum, buf._data, g) if nesterov else buf._data
                pd[...] = _fma(xp, -lr, g, pd)
                p._bump_version()
        return loss
